import {
  latencyFor,
  parseLatencySet,
  runInstancesAnswerMs,
} from '../../../local/ec2-proxy/latency';

const known = (action: string) => ['RunInstances', 'CreateTags'].includes(action);

describe('runInstancesAnswer latency (a launch whose answer is late)', () => {
  it('is taken, and holds no call before it is handled', () => {
    const set = parseLatencySet({ runInstancesAnswer: 3000, default: 10 }, known);
    expect(runInstancesAnswerMs(set)).toBe(3000);
    // not an action's delay: RunInstances waits the default before it is handled
    expect(latencyFor(set, 'RunInstances')).toBe(10);
    expect(runInstancesAnswerMs(parseLatencySet({}, known))).toBe(0);
  });

  it('refuses an unknown key, naming the special ones', () => {
    expect(() => parseLatencySet({ runInstancesAnswr: 1 }, known)).toThrow(
      'unknown field "runInstancesAnswr" (expected "default", "pendingToRunning", "runInstancesAnswer" or lower-camel EC2 action names such as "runInstances")',
    );
  });
});
