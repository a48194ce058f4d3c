import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("ratelimits.listOverrides", "ratelimit.listOverrides");
