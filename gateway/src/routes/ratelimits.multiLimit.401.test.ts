import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("ratelimits.multiLimit", "ratelimit.multiLimit");
