import type { Command } from '../command.ts';
import { kbExport } from './kb-export.ts';
import { compare } from './compare.ts';

/** Every command, in the order `cuilink --help` lists them. Add yours here. */
export const commands: Command[] = [kbExport, compare];
