import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("ratelimits.deleteOverride", "ratelimit.deleteOverride");
