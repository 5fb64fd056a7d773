import { ensureToolchain, ToolchainError } from './toolchain';

/** `npm run toolchain`: installs (or checks) the local stack's servers and prints where they are. */
ensureToolchain((line) => console.log(line))
  .then((tc) => console.log(JSON.stringify(tc, null, 2)))
  .catch((err: unknown) => {
    console.error(err instanceof ToolchainError ? err.message : err);
    process.exit(1);
  });
