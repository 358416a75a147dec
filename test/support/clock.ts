// A clock that moves only when the test says so: cache TTLs are tested at their exact edges
// (one millisecond before and at expiry) without sleeping, so a loaded machine cannot flake them.
export class ManualClock {
  constructor(private t = 1_700_000_000_000) {}
  /** Pass as a `now` dependency. */
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}
