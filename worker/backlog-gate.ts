/**
 * The counting behind the worker's workflow-task slots (worker/tuner.ts hands
 * them to the SDK): plain logic, no SDK, so the unit tests drive it directly.
 *
 * Why a backlog and not fewer slots: a machine's first task holds its slot
 * while its launch, a local activity, waits seconds for its batch, so the
 * worker needs as many slots as cached runs (worker/settings.ts). But with
 * 1,000 free slots its pollers take a whole burst's first tasks at once, and a
 * worker starved of CPU (~14 % of a core) could not even begin most of them
 * within the server's 20 s workflow-task timeout: 1,004 timed out in a
 * 1,000-machine bench. A task waiting in a local activity has begun and
 * costs nothing while it waits; only the tasks received and not yet begun
 * are the backlog that times out. So the gate bounds that backlog, workflow
 * permits out less local activities running, and leaves the slots as they are.
 */

/**
 * A slot handed out by a gate. The SDK hands the same object back when the
 * slot is used and when it is released (its bridge keeps the value), so the
 * permit itself remembers both: a second release, or a use after release,
 * changes no count. It also remembers the gate that issued it: a permit of
 * the other gate (the workflow gate's on the local-activity slots, or the
 * other way round) is ignored there, so it neither moves the wrong count nor
 * is marked released before its own gate sees it (which would then ignore
 * the real release and hold a slot for good). The SDK does not mix them.
 */
export class GatePermit {
  used = false;
  released = false;
  /** A local activity's permit: whether its running takes its task out of the backlog. */
  counted = false;

  constructor(readonly gate: PermitGate) {}
}

/**
 * Permits counted out while a condition holds, with the reservations that
 * found it closed waiting in order, those marked first ahead of the rest
 * but never twice in a row while the rest wait (below). A change that may
 * open it wakes them (no polling, no timer); a waiter whose signal aborts
 * leaves its queue and its listener goes with it.
 */
export abstract class PermitGate {
  private issuedCount = 0;
  private readonly waitingFirst: Array<(permit: GatePermit) => void> = [];
  private readonly waitingRest: Array<(permit: GatePermit) => void> = [];
  /** Whether the last waiter served was one marked first (see wake). */
  private servedFirstLast = false;

  /** Permits out: reserved and not yet released. */
  get issued(): number {
    return this.issuedCount;
  }

  /** Reservations waiting for the gate to open. */
  get waiters(): number {
    return this.waitingFirst.length + this.waitingRest.length;
  }

  protected abstract isOpen(): boolean;

  /**
   * A permit now, or null. After every change the gate either has no waiters
   * or is closed (a change that opens it serves them first), so one taken
   * here never jumps the queue.
   */
  tryReserve(): GatePermit | null {
    return this.waiters === 0 && this.isOpen() ? this.issue() : null;
  }

  /**
   * A permit when the gate opens. An abort rejects with the signal's reason:
   * the SDK's bridge aborts with its own reason and logs any other rejection
   * of an aborted reservation as an error (@temporalio/worker
   * lib/worker-tuner.js), and a plain `AbortController.abort()` makes the
   * reason an AbortError. `first`: served before every waiter not so marked
   * when the gate opens (in order among themselves).
   */
  reserve(signal: AbortSignal, first = false): Promise<GatePermit> {
    // the reason is whatever the aborter gave: the bridge's is a string, not an Error
    const reason = (): unknown => signal.reason;
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- exactly the signal's reason, as the SDK asks
    if (signal.aborted) return Promise.reject(reason());
    const now = this.tryReserve();
    if (now) return Promise.resolve(now);
    const queue = first ? this.waitingFirst : this.waitingRest;
    return new Promise<GatePermit>((resolve, reject) => {
      const grant = (permit: GatePermit): void => {
        signal.removeEventListener('abort', abort);
        resolve(permit);
      };
      const abort = (): void => {
        const at = queue.indexOf(grant);
        if (at >= 0) queue.splice(at, 1);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- as above
        reject(reason());
      };
      queue.push(grant);
      signal.addEventListener('abort', abort, { once: true });
    });
  }

  /** Whether this gate issued the permit (one of another gate is ignored: see GatePermit). */
  protected owns(permit: GatePermit): boolean {
    return permit.gate === this;
  }

  /**
   * Gives a permit back (once: a permit released before is left as it is;
   * one of another gate is not this gate's to count, nor to mark released).
   */
  release(permit: GatePermit): void {
    if (permit.released || !this.owns(permit)) return;
    permit.released = true;
    // issued here and released once: counted when it was issued
    this.issuedCount -= 1;
    this.wake();
  }

  /**
   * Serves the waiters while the gate is open: one marked first ahead of the
   * rest, but while both wait, the two kinds in turn. Strictly first-marked
   * ahead would leave the rest unserved as long as first-marked reservations
   * keep coming (the sticky poll loop asks again after every grant, and the
   * normal loop then has no poll out: the shared queue, where new machines'
   * first tasks wait, would go unpolled while the gate stays shut).
   */
  protected wake(): void {
    while (this.waiters > 0 && this.isOpen()) {
      const takeFirst =
        this.waitingFirst.length > 0 && (this.waitingRest.length === 0 || !this.servedFirstLast);
      const next = takeFirst ? this.waitingFirst.shift() : this.waitingRest.shift();
      this.servedFirstLast = takeFirst;
      next?.(this.issue());
    }
  }

  private issue(): GatePermit {
    this.issuedCount += 1;
    return new GatePermit(this);
  }
}

/**
 * The workflow-task slots: at most `slotCap` out, and at most `backlogLimit`
 * of them not in a local activity. A permit a poller holds while it polls
 * counts too: the task it brings back joins the backlog.
 *
 * What local activities subtract is bounded twice. The tuner counts only
 * the local-activity types a task runs one at a time (worker/tuner.ts), so a
 * task with two at once is not subtracted twice. And the local activities
 * subtracted never exceed the tasks received and not released (permits
 * marked used), so the polls out (permits not yet holding a task) stay within
 * the limit whatever the local activities do. Not bounded: a counted local
 * activity still running after its task ended (the task timed out or was
 * evicted; the core lets the activity finish) is not told apart from one
 * whose task is here (the slot info names no run), so until it ends it may
 * stand for a task received since: the tasks received and not begun stay
 * within the limit plus such activities. They come only from tasks that
 * already timed out, and last no longer than their step (a launch's 211 s at
 * most).
 */
export class WorkflowBacklogGate extends PermitGate {
  private localActivities = 0;
  private receivedCount = 0;

  constructor(
    readonly backlogLimit: number,
    readonly slotCap: number,
  ) {
    super();
  }

  /** Workflow tasks out and not waiting in a local activity. */
  get backlog(): number {
    return this.issued - Math.min(this.localActivities, this.receivedCount);
  }

  /** Local activities running that count (see above), each inside a workflow task. */
  get localActivitiesRunning(): number {
    return this.localActivities;
  }

  /** Workflow tasks received (their permits marked used) and not yet released. */
  get received(): number {
    return this.receivedCount;
  }

  protected isOpen(): boolean {
    return this.issued < this.slotCap && this.backlog < this.backlogLimit;
  }

  /** A poll brought a task in this permit (once per permit, and not after its release). */
  markUsed(permit: GatePermit): void {
    if (permit.used || permit.released || !this.owns(permit)) return;
    permit.used = true;
    this.receivedCount += 1;
    // a local activity that outran its count may now take this task out of the backlog
    this.wake();
  }

  override release(permit: GatePermit): void {
    if (!this.owns(permit)) return;
    if (!permit.released && permit.used && this.receivedCount > 0) this.receivedCount -= 1;
    super.release(permit);
  }

  /** A local activity began: its task has begun and now mostly waits, so one more may come in. */
  localActivityStarted(): void {
    this.localActivities += 1;
    this.wake();
  }

  /** A local activity ended: its task is working again (no waiter can enter for it). */
  localActivityEnded(): void {
    if (this.localActivities > 0) this.localActivities -= 1;
  }
}

/**
 * The local-activity slots: a fixed count, as the SDK's fixed-size supplier
 * has it, whose uses are told to the workflow gate (a local activity runs
 * only inside a workflow task, so its running is what takes its task out of
 * the backlog).
 */
export class LocalActivitySlots extends PermitGate {
  constructor(
    readonly size: number,
    private readonly workflows: WorkflowBacklogGate,
  ) {
    super();
  }

  protected isOpen(): boolean {
    return this.issued < this.size;
  }

  /**
   * The SDK runs a local activity in this slot (once per permit, and not
   * after its release); `counted`: a type its task runs one at a time, whose
   * running takes the task out of the backlog.
   */
  markUsed(permit: GatePermit, counted = true): void {
    if (permit.used || permit.released || !this.owns(permit)) return;
    permit.used = true;
    permit.counted = counted;
    if (counted) this.workflows.localActivityStarted();
  }

  override release(permit: GatePermit): void {
    if (permit.released || !this.owns(permit)) return;
    if (permit.counted) this.workflows.localActivityEnded();
    super.release(permit);
  }
}
