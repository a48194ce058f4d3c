import { describeKeyList400 } from "./key-lists.400-suite.ts";

describeKeyList400("keys.addRoles");
