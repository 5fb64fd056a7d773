import { getEventListeners } from 'node:events';
import { GatePermit, LocalActivitySlots, WorkflowBacklogGate } from '../../../worker/backlog-gate';
import { settled } from '../../support/settled';

/** Permits whose polls brought tasks (marked used), as the SDK reports a task received. */
function reserveMany(gate: WorkflowBacklogGate, n: number): GatePermit[] {
  return Array.from({ length: n }, () => {
    const permit = gate.tryReserve();
    if (!permit) throw new Error('the gate closed early');
    gate.markUsed(permit);
    return permit;
  });
}

/** An abort controller and the abort listeners its signal holds. */
function watchedSignal(): { controller: AbortController; listeners: () => number } {
  const controller = new AbortController();
  return { controller, listeners: () => getEventListeners(controller.signal, 'abort').length };
}

describe('WorkflowBacklogGate', () => {
  it('resolves reservations up to the backlog at once', async () => {
    const gate = new WorkflowBacklogGate(3, 10);
    const signal = new AbortController().signal;
    const permits = [gate.reserve(signal), gate.reserve(signal), gate.reserve(signal)];
    await expect(Promise.all(permits)).resolves.toHaveLength(3);
    expect(gate.issued).toBe(3);
    expect(gate.backlog).toBe(3);
    expect(gate.waiters).toBe(0);
  });

  it('holds the next reservation until a workflow slot is released', async () => {
    const gate = new WorkflowBacklogGate(2, 10);
    const [first] = reserveMany(gate, 2);
    const next = gate.reserve(new AbortController().signal);
    expect(await settled(next)).toBe(false);
    expect(gate.waiters).toBe(1);
    gate.release(first!);
    await expect(next).resolves.toBeInstanceOf(GatePermit);
    expect(gate.issued).toBe(2);
    expect(gate.waiters).toBe(0);
  });

  it('holds the next reservation until a local activity starts, then lets one more in', async () => {
    const gate = new WorkflowBacklogGate(2, 10);
    const slots = new LocalActivitySlots(5, gate);
    reserveMany(gate, 2);
    const signal = new AbortController().signal;
    const next = gate.reserve(signal);
    const after = gate.reserve(signal);
    expect(await settled(next)).toBe(false);
    // reserved ahead by the SDK: a local-activity slot counts only once it runs
    const local = slots.tryReserve();
    expect(local).not.toBeNull();
    expect(await settled(next)).toBe(false);
    slots.markUsed(local!);
    await expect(next).resolves.toBeInstanceOf(GatePermit);
    // three out, one of them waiting in its local activity: a backlog of two again
    expect(gate.issued).toBe(3);
    expect(gate.backlog).toBe(2);
    expect(await settled(after)).toBe(false);
    expect(gate.waiters).toBe(1);
  });

  it('serves waiters in the order they came', async () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const [held] = reserveMany(gate, 1);
    const signal = new AbortController().signal;
    const order: string[] = [];
    const a = gate.reserve(signal).then((p) => (order.push('a'), p));
    const b = gate.reserve(signal).then((p) => (order.push('b'), p));
    gate.release(held!);
    gate.release(await a);
    await b;
    expect(order).toEqual(['a', 'b']);
  });

  it('serves a sticky (first) waiter ahead of normal ones, the two kinds in turn while both wait, each in order, and counts both in the backlog', async () => {
    const gate = new WorkflowBacklogGate(2, 10);
    const held = reserveMany(gate, 2);
    const signal = new AbortController().signal;
    const order: string[] = [];
    const waitFor = (name: string, first: boolean) =>
      gate.reserve(signal, first).then((p) => (order.push(name), p));
    const normal1 = waitFor('normal1', false);
    const sticky1 = waitFor('sticky1', true);
    const normal2 = waitFor('normal2', false);
    const sticky2 = waitFor('sticky2', true);
    expect(gate.waiters).toBe(4);
    gate.release(held[0]!);
    gate.release(held[1]!);
    await Promise.all([sticky1, normal1]);
    // a sticky one first, though normal1 waited longer; then a normal one, not sticky2
    expect(order).toEqual(['sticky1', 'normal1']);
    // the backlog bound holds for both: the second of each kind still waits
    expect(gate.backlog).toBe(2);
    expect(await settled(sticky2)).toBe(false);
    expect(await settled(normal2)).toBe(false);
    gate.release(await sticky1);
    gate.release(await normal1);
    await Promise.all([sticky2, normal2]);
    expect(order).toEqual(['sticky1', 'normal1', 'sticky2', 'normal2']);
    expect(gate.waiters).toBe(0);
  });

  it('a sticky waiter asking again after every grant never keeps a normal one waiting past one turn', async () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const [held] = reserveMany(gate, 1);
    const signal = new AbortController().signal;
    const normal = gate.reserve(signal);
    let sticky = gate.reserve(signal, true);
    gate.release(held!);
    // the sticky one is served first, and its loop asks again at once, as the SDK's does
    const first = await sticky;
    sticky = gate.reserve(signal, true);
    gate.release(first);
    // the normal one's turn now, not the sticky loop's again
    await expect(normal).resolves.toBeInstanceOf(GatePermit);
    expect(await settled(sticky)).toBe(false);
    expect(gate.waiters).toBe(1);
  });

  it('a sticky waiter that aborts leaves its queue and the normal one is served', async () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const [held] = reserveMany(gate, 1);
    const controller = new AbortController();
    const sticky = gate.reserve(controller.signal, true);
    const normal = gate.reserve(new AbortController().signal);
    controller.abort('Request Cancelled');
    await expect(sticky).rejects.toBe('Request Cancelled');
    gate.release(held!);
    await expect(normal).resolves.toBeInstanceOf(GatePermit);
    expect(gate.issued).toBe(1);
    expect(gate.waiters).toBe(0);
  });

  it('100 tasks in and 600 local activities running: the polls out stay within the limit; the tasks received grow to the activities plus the limit, no further', () => {
    const gate = new WorkflowBacklogGate(100, 1000);
    const slots = new LocalActivitySlots(1000, gate);
    reserveMany(gate, 100);
    // more local activities than tasks: run beside each other, or outliving their tasks
    for (let i = 0; i < 600; i += 1) slots.markUsed(slots.tryReserve()!);
    expect(gate.localActivitiesRunning).toBe(600);
    expect(gate.backlog).toBe(0);
    // polls only (no task brought back yet): the limit's worth, no more
    const polls: GatePermit[] = [];
    for (let p = gate.tryReserve(); p; p = gate.tryReserve()) polls.push(p);
    expect(polls).toHaveLength(100);
    expect(gate.issued).toBe(200);
    expect(gate.backlog).toBe(100);
    // each poll brings a task, as the SDK marks it at once: the activities beyond the tasks
    // received (outliving theirs: the slot info cannot say whose) stand for the new ones, so
    // more come in, until the tasks received are the activities plus the limit
    for (const p of polls) gate.markUsed(p);
    for (let p = gate.tryReserve(); p; p = gate.tryReserve()) gate.markUsed(p);
    expect(gate.received).toBe(700);
    expect(gate.backlog).toBe(100);
    expect(gate.tryReserve()).toBeNull();
  });

  it('a local activity still running after its task ended opens no poll beyond the limit', () => {
    const gate = new WorkflowBacklogGate(2, 10);
    const slots = new LocalActivitySlots(5, gate);
    const [task] = reserveMany(gate, 1);
    slots.markUsed(slots.tryReserve()!);
    gate.release(task!);
    expect(gate.received).toBe(0);
    // no task received: the local activity subtracts nothing, two polls and no more
    const polls = [gate.tryReserve()!, gate.tryReserve()!];
    expect(gate.tryReserve()).toBeNull();
    expect(gate.backlog).toBe(2);
    // a poll brings a task: the local activity may stand for it (the slot info cannot say
    // whose it is), but the polls out still stay within the limit
    gate.markUsed(polls[0]!);
    expect(gate.backlog).toBe(1);
    expect(gate.tryReserve()).not.toBeNull();
    expect(gate.tryReserve()).toBeNull();
    expect(gate.issued - gate.received).toBe(2);
  });

  it('an uncounted local activity (a type a task may run beside another) takes nothing out', () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const slots = new LocalActivitySlots(5, gate);
    reserveMany(gate, 1);
    const local = slots.tryReserve()!;
    slots.markUsed(local, false);
    expect(gate.localActivitiesRunning).toBe(0);
    expect(gate.tryReserve()).toBeNull();
    slots.release(local);
    expect(gate.localActivitiesRunning).toBe(0);
    expect(gate.backlog).toBe(1);
  });

  it('keeps the total cap even when the backlog is low', async () => {
    const gate = new WorkflowBacklogGate(2, 4);
    const slots = new LocalActivitySlots(10, gate);
    const permits = reserveMany(gate, 2);
    // both tasks in local activities: a backlog of zero, two more may come in
    for (const p of [slots.tryReserve(), slots.tryReserve()]) slots.markUsed(p!);
    permits.push(...reserveMany(gate, 2));
    for (const p of [slots.tryReserve(), slots.tryReserve()]) slots.markUsed(p!);
    expect(gate.backlog).toBe(0);
    expect(gate.issued).toBe(4);
    expect(gate.tryReserve()).toBeNull();
    const next = gate.reserve(new AbortController().signal);
    expect(await settled(next)).toBe(false);
    gate.release(permits[0]!);
    await expect(next).resolves.toBeInstanceOf(GatePermit);
    expect(gate.issued).toBe(4);
  });

  it('tryReserve: a permit under both limits, null over either', () => {
    const overBacklog = new WorkflowBacklogGate(2, 10);
    expect(overBacklog.tryReserve()).toBeInstanceOf(GatePermit);
    expect(overBacklog.tryReserve()).toBeInstanceOf(GatePermit);
    expect(overBacklog.tryReserve()).toBeNull();
    expect(overBacklog.issued).toBe(2);

    const overCap = new WorkflowBacklogGate(10, 2);
    expect(overCap.tryReserve()).toBeInstanceOf(GatePermit);
    expect(overCap.tryReserve()).toBeInstanceOf(GatePermit);
    expect(overCap.tryReserve()).toBeNull();
    expect(overCap.issued).toBe(2);
  });

  it('tryReserve does not take a permit ahead of a waiter', async () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const [held] = reserveMany(gate, 1);
    const waiting = gate.reserve(new AbortController().signal);
    gate.release(held!);
    // the release went to the waiter: the gate is full again
    expect(gate.tryReserve()).toBeNull();
    await expect(waiting).resolves.toBeInstanceOf(GatePermit);
  });

  it('an abort rejects with an AbortError, removes the waiter and its listener, and takes no permit', async () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const [held] = reserveMany(gate, 1);
    const { controller, listeners } = watchedSignal();
    const waiting = gate.reserve(controller.signal);
    expect(gate.waiters).toBe(1);
    expect(listeners()).toBe(1);
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    await expect(waiting).rejects.toBe(controller.signal.reason);
    expect(gate.waiters).toBe(0);
    expect(listeners()).toBe(0);
    gate.release(held!);
    expect(gate.issued).toBe(0);
  });

  it('rejects at once, with no waiter, when the signal aborted before the call', async () => {
    const gate = new WorkflowBacklogGate(5, 10);
    const controller = new AbortController();
    controller.abort();
    await expect(gate.reserve(controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
    expect(gate.issued).toBe(0);
    expect(gate.waiters).toBe(0);
  });

  it('leaves no listener behind on a reservation granted at once or after a wait', async () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const { controller, listeners } = watchedSignal();
    const first = await gate.reserve(controller.signal);
    expect(listeners()).toBe(0);
    const second = gate.reserve(controller.signal);
    expect(listeners()).toBe(1);
    gate.release(first);
    await second;
    expect(listeners()).toBe(0);
    // an abort after the grant changes nothing
    controller.abort();
    expect(gate.issued).toBe(1);
  });

  it('a permit released twice, or one it never issued, drives no count below zero', () => {
    const gate = new WorkflowBacklogGate(2, 10);
    const [permit] = reserveMany(gate, 1);
    gate.release(permit!);
    gate.release(permit!);
    expect(gate.issued).toBe(0);
    gate.release(new GatePermit(new WorkflowBacklogGate(2, 10)));
    expect(gate.issued).toBe(0);
    expect(gate.backlog).toBe(0);
    gate.localActivityEnded();
    expect(gate.localActivitiesRunning).toBe(0);
    // and the gate still counts right afterwards
    reserveMany(gate, 2);
    expect(gate.tryReserve()).toBeNull();
  });
});

describe('a permit of the other gate', () => {
  it('is ignored by each gate, with permits out on both: no count moves, and it is not marked released or used', () => {
    const gate = new WorkflowBacklogGate(3, 10);
    const slots = new LocalActivitySlots(5, gate);
    const tasks = reserveMany(gate, 2);
    const locals = [slots.tryReserve()!, slots.tryReserve()!];
    slots.markUsed(locals[0]!);
    expect([gate.issued, gate.received, gate.backlog]).toEqual([2, 2, 1]);
    expect([slots.issued, gate.localActivitiesRunning]).toEqual([2, 1]);

    // a local-activity permit on the workflow gate: used or released, nothing moves there
    gate.markUsed(locals[1]!);
    gate.release(locals[0]!);
    expect([gate.issued, gate.received, gate.backlog]).toEqual([2, 2, 1]);
    expect(locals[0]).toMatchObject({ released: false });
    expect(locals[1]).toMatchObject({ used: false, released: false });
    // a workflow permit on the local-activity slots: nothing moves there either
    slots.markUsed(tasks[0]!);
    slots.release(tasks[1]!);
    expect([slots.issued, gate.localActivitiesRunning]).toEqual([2, 1]);
    expect(tasks[1]).toMatchObject({ released: false });

    // each permit's own release still counts, once: nothing leaked
    slots.release(locals[0]!);
    slots.release(locals[1]!);
    gate.release(tasks[0]!);
    gate.release(tasks[1]!);
    expect([gate.issued, gate.received, gate.backlog, gate.localActivitiesRunning]).toEqual([
      0, 0, 0, 0,
    ]);
    expect(slots.issued).toBe(0);
    expect(reserveMany(gate, 3)).toHaveLength(3);
    expect(gate.tryReserve()).toBeNull();
  });

  it('of another workflow gate is ignored too', () => {
    const gate = new WorkflowBacklogGate(2, 10);
    const other = new WorkflowBacklogGate(2, 10);
    reserveMany(gate, 2);
    const [foreign] = reserveMany(other, 1);
    gate.release(foreign!);
    expect([gate.issued, gate.received]).toEqual([2, 2]);
    expect(gate.tryReserve()).toBeNull();
    other.release(foreign!);
    expect(other.issued).toBe(0);
  });
});

describe('LocalActivitySlots', () => {
  it('is a fixed count: reservations wait for a release', async () => {
    const gate = new WorkflowBacklogGate(10, 10);
    const slots = new LocalActivitySlots(2, gate);
    const a = slots.tryReserve();
    expect(slots.tryReserve()).toBeInstanceOf(GatePermit);
    expect(slots.tryReserve()).toBeNull();
    const next = slots.reserve(new AbortController().signal);
    expect(await settled(next)).toBe(false);
    slots.release(a!);
    await expect(next).resolves.toBeInstanceOf(GatePermit);
    expect(slots.issued).toBe(2);
  });

  it('counts a local activity from its use to its release, once per permit', () => {
    const gate = new WorkflowBacklogGate(10, 10);
    const slots = new LocalActivitySlots(5, gate);
    const used = slots.tryReserve()!;
    const unused = slots.tryReserve()!;
    slots.markUsed(used);
    slots.markUsed(used);
    expect(gate.localActivitiesRunning).toBe(1);
    // a slot released without running (the SDK reserves one ahead) was never counted
    slots.release(unused);
    expect(gate.localActivitiesRunning).toBe(1);
    slots.release(used);
    slots.release(used);
    expect(gate.localActivitiesRunning).toBe(0);
    expect(slots.issued).toBe(0);
    // a use reported after the release changes nothing
    slots.markUsed(used);
    expect(gate.localActivitiesRunning).toBe(0);
  });

  it('an ended local activity puts its task back in the backlog and lets no waiter in', async () => {
    const gate = new WorkflowBacklogGate(1, 10);
    const slots = new LocalActivitySlots(5, gate);
    reserveMany(gate, 1);
    const local = slots.tryReserve()!;
    slots.markUsed(local);
    expect(gate.backlog).toBe(0);
    const next = await gate.reserve(new AbortController().signal);
    expect(next).toBeInstanceOf(GatePermit);
    slots.release(local);
    // two tasks out, neither in a local activity: over the backlog of one until one ends
    expect(gate.backlog).toBe(2);
    expect(gate.tryReserve()).toBeNull();
  });
});
