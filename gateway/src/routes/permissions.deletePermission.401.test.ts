import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("permissions.deletePermission");
