import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("apis.listKeys");
