import { describeKeyList404 } from "../../../testing/key-lists.suite.ts";

describeKeyList404("keys.addRoles");
