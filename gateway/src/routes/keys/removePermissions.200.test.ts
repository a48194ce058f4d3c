import { describeKeyList200 } from "./key-lists.suites.ts";

describeKeyList200("keys.removePermissions");
