/** Injected time, so expiry, refills and windows can be tested. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export class TestClock implements Clock {
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now() {
    return this.t;
  }
  set(t: number) {
    this.t = t;
  }
  advance(ms: number) {
    this.t += ms;
  }
}
