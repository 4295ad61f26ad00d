/** One CLI command: `cuilink <name> ...`. Each lives in src/cli/commands/<name>.ts. */
export interface Command {
  /** Space-separated path, e.g. `index build`. */
  name: string;
  summary: string;
  /** Full help text printed by `--help`. */
  usage: string;
  run(argv: string[]): Promise<number>;
}
