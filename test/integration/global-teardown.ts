export default async function globalTeardown(): Promise<void> {
  await globalThis.__PROVISIONER_STACK__?.stop();
  globalThis.__PROVISIONER_STACK__ = undefined;
}
