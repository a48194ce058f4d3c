import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("ratelimits.limit", "ratelimit.limit");
