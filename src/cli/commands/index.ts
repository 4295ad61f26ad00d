import type { Command } from '../command.ts';
import { kbExport } from './kb-export.ts';
import { dlqInspect } from './dlq.ts';
import { dlqReplay } from './dlq-replay.ts';
import { indexBuild } from './index-build.ts';
import { indexInfo } from './index-info.ts';
import { indexActivate } from './index-activate.ts';
import { link } from './link.ts';
import { makeEvalCommand } from './eval.ts';
import { compare } from './compare.ts';
import { calibrate } from './calibrate.ts';
import { evaluator } from './evaluator.ts';
import { goldSample } from './gold-sample.ts';
import { run } from './run.ts';
import { topicsCreate, topicsDescribe } from './topics.ts';
import { topicsRead } from './topics-read.ts';
import { demo } from './demo.ts';
import { memoryAdd, memoryExport, memoryInfo, memoryRemove } from './memory.ts';
import { memoryErase } from './memory-erase.ts';
import { memoryUpdater } from './memory-updater.ts';
import { annotateExport } from './annotate-export.ts';
import { annotateImport } from './annotate-import.ts';
import { openLinker } from '../../link/open-linker.ts';

/** Every command, in the order `cuilink --help` lists them. Add yours here. */
export const commands: Command[] = [kbExport, indexBuild, indexInfo, indexActivate, link, makeEvalCommand(openLinker), calibrate, compare, evaluator, goldSample, run, topicsCreate, topicsDescribe, topicsRead, demo, memoryAdd, memoryInfo, memoryExport, memoryRemove, memoryErase, memoryUpdater, annotateExport, annotateImport, dlqInspect, dlqReplay];
