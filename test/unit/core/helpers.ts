/** Asserts that `fn` throws an instance of `type` (exactly that class) with exactly `message`. */
export function expectThrows(
  fn: () => unknown,
  type: abstract new (...args: never[]) => Error,
  message: string,
): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(type);
  expect((caught as Error).constructor).toBe(type);
  expect((caught as Error).name).toBe(type.name);
  expect((caught as Error).message).toBe(message);
}
