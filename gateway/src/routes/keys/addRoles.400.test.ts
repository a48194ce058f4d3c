import { describeKeyList400 } from "../../../testing/key-lists.suite.ts";

describeKeyList400("keys.addRoles");
