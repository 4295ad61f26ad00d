import { commands } from './commands/index.ts';
import { CuilinkError } from '../kb/errors.ts';
import { brokerFailureLine, isBrokerFailure } from './broker-failure.ts';

const VERSION = '0.1.0';

function topLevelHelp(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `cuilink ${VERSION} — streaming biomedical entity linker\n\nUsage: cuilink <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun 'cuilink <command> --help' for a command's options.`;
}

/** Finds the longest command name that prefixes argv (`index build` before `index`). */
function resolve(argv: string[]): { command: (typeof commands)[number]; rest: string[] } | undefined {
  for (let take = Math.min(argv.length, 3); take >= 1; take--) {
    const name = argv.slice(0, take).join(' ');
    const command = commands.find((c) => c.name === name);
    if (command) return { command, rest: argv.slice(take) };
  }
  return undefined;
}

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    console.log(topLevelHelp());
    return argv.length === 0 ? 1 : 0;
  }
  if (argv[0] === '--version') {
    console.log(VERSION);
    return 0;
  }
  const found = resolve(argv);
  if (!found) {
    const group = commands.filter((c) => c.name.startsWith(`${argv[0]} `));
    if (group.length > 0 && argv.length === 2 && (argv[1] === '--help' || argv[1] === '-h')) {
      // The top-level help sends every command to '--help', groups included: list their subcommands.
      const width = Math.max(...group.map((c) => c.name.length));
      console.log(`Usage: cuilink ${argv[0]} <subcommand> [options]\n\n${group.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}\n\nRun 'cuilink ${argv[0]} <subcommand> --help' for its options.`);
      return 0;
    }
    if (group.length > 0) {
      console.error(`cuilink: '${argv.join(' ')}' needs a subcommand: ${group.map((c) => c.name).join(', ')}`);
    } else {
      console.error(`cuilink: unknown command '${argv[0]}' (see 'cuilink --help')`);
    }
    return 2;
  }
  if (found.rest.includes('--help') || found.rest.includes('-h')) {
    console.log(found.command.usage);
    return 0;
  }
  try {
    return await found.command.run(found.rest);
  } catch (error) {
    // A broker that cannot be reached (or refuses us) is exit 3 with one line naming it; flag and config errors are 2.
    if (isBrokerFailure(error)) {
      console.error(`cuilink ${found.command.name}: ${brokerFailureLine(error)}`);
      return 3;
    }
    if (error instanceof CuilinkError) {
      console.error(`cuilink ${found.command.name}: ${error.message}`);
      return 2;
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`cuilink ${found.command.name}: ${error.message}`);
      return 2;
    }
    throw error;
  }
}

process.exitCode = await main(process.argv.slice(2));
// Every command has closed what it opened by now (the demo its broker too), except a `cuilink run`
// stopped during a start-up step that cannot be cut short (it abandons it); this guards against
// such handles keeping the process up, so it is armed after the command, not before.
setTimeout(() => process.exit(), 5000).unref();
