import { describeKeyList404 } from "./key-lists.suites.ts";

describeKeyList404("keys.setRoles");
