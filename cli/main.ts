import { Command, CommanderError } from 'commander';
import { registerApplicationCommands } from './commands/applications';
import { registerIdentityCommands } from './commands/identity';
import { registerLoginCommands } from './commands/login';
import { registerMachineCommands } from './commands/machines';
import { registerModelConfigCommand } from './commands/model-config';
import { registerModelCommands } from './commands/models';
import { cliVersion, registerShowCommands, versionLine } from './commands/show';
import { registerStatusLogCommand } from './commands/status-log';
import { registerStatusCommand } from './commands/status';
import { processContext, Session, type Context } from './context';
import { CliError } from './errors';

export function buildProgram(session: Session): Command {
  const program = new Command('provisioner')
    .description(
      "Juju's verbs for the machine provisioner's HTTPS API: models, applications, units, machines and their status; users, access and audit.",
    )
    .showSuggestionAfterError(true)
    .version(versionLine(cliVersion()), '--version', 'print the CLI version (as "version" does)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => session.ctx.stdout.write(s),
      writeErr: (s) => session.ctx.stderr.write(s),
      outputError: (s, write) => write(`ERROR ${s.replace(/^error: /, '')}`),
    });
  registerModelCommands(program, session);
  registerApplicationCommands(program, session);
  registerMachineCommands(program, session);
  registerStatusCommand(program, session);
  registerShowCommands(program, session);
  registerModelConfigCommand(program, session);
  registerStatusLogCommand(program, session);
  registerLoginCommands(program, session);
  registerIdentityCommands(program, session);
  for (const cmd of program.commands) {
    cmd.exitOverride().configureOutput({
      writeOut: (s) => session.ctx.stdout.write(s),
      writeErr: (s) => session.ctx.stderr.write(s),
      outputError: (s, write) => write(`ERROR ${s.replace(/^error: /, '')}`),
    });
  }
  return program;
}

/** Runs one command line; returns the exit code. Errors are printed, never thrown. */
export async function run(argv: string[], ctx: Context = processContext()): Promise<number> {
  const session = new Session(ctx);
  const program = buildProgram(session);
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has printed its message (or the help) already
      if (err.exitCode === 0) return 0;
      return 2;
    }
    if (err instanceof CliError) {
      ctx.stderr.write(`ERROR ${err.message}\n`);
      return err.exitCode;
    }
    const message = err instanceof Error ? err.message : String(err);
    ctx.stderr.write(`ERROR ${message}\n`);
    return 1;
  }
}

if (require.main === module) {
  void run(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
