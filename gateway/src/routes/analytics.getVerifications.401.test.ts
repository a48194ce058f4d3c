import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("analytics.getVerifications");
