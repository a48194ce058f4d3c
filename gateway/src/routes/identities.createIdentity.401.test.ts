import { describeUnauthenticated } from "../testing.ts";

describeUnauthenticated("identities.createIdentity");
