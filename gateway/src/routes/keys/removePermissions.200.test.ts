import { describeKeyList200 } from "../../../testing/key-lists.suite.ts";

describeKeyList200("keys.removePermissions");
