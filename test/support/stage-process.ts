import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StageConfigInput } from '../../src/stream/stage-config.ts';

/** `node bin/cuilink.js run --config FILE` as a child process, with its JSON log lines collected. */
export class StageProcess {
  readonly lines: string[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;

  constructor(dir: string, name: string, config: StageConfigInput) {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(config, null, 2));
    this.child = spawn(process.execPath, ['bin/cuilink.js', 'run', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CUILINK_LOG_LEVEL: 'info' } });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      let buffered = '';
      stream.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const parts = buffered.split('\n');
        buffered = parts.pop()!;
        this.lines.push(...parts);
      });
    }
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve(signal ? null : code)));
  }

  logged(message: string): boolean {
    return this.lines.some((l) => l.includes(`"message":"${message}"`));
  }

  async untilLogged(message: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.logged(message)) {
      if (this.child.exitCode !== null) throw new Error(`stage exited (${this.child.exitCode}) before logging '${message}':\n${this.lines.slice(-20).join('\n')}`);
      if (Date.now() > deadline) throw new Error(`stage did not log '${message}' within ${timeoutMs} ms:\n${this.lines.slice(-20).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * A counter of the stage's own /metrics (summed over its labels; 0 before the first count): its
   * progress without the lag of a consumer reading its output.
   */
  async counter(name: string): Promise<number> {
    const listening = this.lines.find((l) => l.includes('"message":"http listening"'));
    if (!listening) return 0;
    const { url } = JSON.parse(listening) as { url: string };
    const text = await (await fetch(`${url}/metrics`)).text();
    const pattern = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm');
    return [...text.matchAll(pattern)].reduce((sum, m) => sum + Number(m[1]), 0);
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}
