import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("apis.deleteApi");
