import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deployLint, installOrSkip, kustomize, run } from './deploy-tools.ts';

// What the deploy/ tests (deploy-manifests, deploy-workloads, deploy-network-policies) share:
// both overlays rendered by kustomize and read as JSON, and the lookups into them.

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
export const OVERLAYS = ['cpu', 'gpu'] as const;
export const K8S_VERSIONS = ['1.29.0', '1.33.0'];
/** The workloads that run pods, the linker's StatefulSet included. */
export const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'Job']);

export const byKind = (docs: Json[], kind: string, name?: string): Json => {
  const found = docs.find((d) => d.kind === kind && (name === undefined || d.metadata.name === name));
  assert.ok(found, `${kind}${name ? `/${name}` : ''} missing`);
  return found;
};
export const container = (deployment: Json): Json => deployment.spec.template.spec.containers[0];

/**
 * The overlays as a test file's before() renders them into a scratch directory, and after()
 * removes it. `setupSkip` says why a test that needs them must skip (no renderer or linter could
 * be installed); `lint` is deploy/scripts/deploy-lint, which also reads YAML as JSON.
 */
export class RenderedOverlays {
  scratch!: string;
  lint: string | undefined;
  setupSkip: string | undefined;
  private readonly rendered = new Map<string, { yaml: string; docs: Json[] }>();

  async start(): Promise<void> {
    this.scratch = mkdtempSync(join(tmpdir(), 'cuilink-deploy-'));
    const [renderer, linter] = await Promise.all([installOrSkip(kustomize), installOrSkip(deployLint)]);
    this.setupSkip = renderer.skip ?? linter.skip;
    if (this.setupSkip) return;
    this.lint = linter.tool!;
    for (const overlay of OVERLAYS) {
      const yaml = await renderer.tool!(`deploy/k8s/overlays/${overlay}`);
      const file = join(this.scratch, `${overlay}.yaml`);
      writeFileSync(file, yaml);
      const json = await run(this.lint, ['yaml', file]);
      assert.equal(json.code, 0, json.stderr);
      this.rendered.set(overlay, { yaml: file, docs: JSON.parse(json.stdout) as Json[] });
    }
  }

  stop(): void {
    rmSync(this.scratch, { recursive: true, force: true });
  }

  /** The overlay's resources, as kustomize rendered them. */
  docs(overlay: (typeof OVERLAYS)[number]): Json[] {
    return this.rendered.get(overlay)!.docs;
  }

  /** The file the overlay's render was written to. */
  yaml(overlay: (typeof OVERLAYS)[number]): string {
    return this.rendered.get(overlay)!.yaml;
  }
}
