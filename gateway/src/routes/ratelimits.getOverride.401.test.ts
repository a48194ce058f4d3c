import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("ratelimits.getOverride", "ratelimit.getOverride");
