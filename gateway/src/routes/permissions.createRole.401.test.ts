import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("permissions.createRole");
