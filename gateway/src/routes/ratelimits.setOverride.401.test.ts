import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("ratelimits.setOverride", "ratelimit.setOverride");
