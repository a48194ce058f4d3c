import { describeKeyList400 } from "./key-lists.suites.ts";

describeKeyList400("keys.setPermissions");
