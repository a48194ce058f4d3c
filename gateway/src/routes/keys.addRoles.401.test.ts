import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("keys.addRoles");
