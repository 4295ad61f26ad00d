import type { ConceptStore } from '../kb/concept-store.ts';
import { Hierarchy } from '../kb/hierarchy.ts';
import { loadKb } from '../kb/load.ts';
import { readIndexManifest } from '../retrieve/index-manifest.ts';
import { resolveIndexDir } from '../retrieve/index-versions.ts';
import { join } from 'node:path';
import type { OntologyView } from './metrics/ontology-view.ts';

/** The metrics' view of a KB: src/kb's ConceptStore for ids and alt ids, its Hierarchy for distances. */
export function kbOntologyView(store: ConceptStore, hierarchy: Hierarchy = Hierarchy.fromStore(store)): OntologyView {
  // Gold ids repeat across mentions; their neighbourhoods walk down from grandparents, so keep them.
  const neighbourhoods = new Map<string, { atOne: number; atTwo: number }>();
  // Alt id → the concepts listing it besides the one it resolves to; built on first use, one pass.
  let otherAltClaimants: Map<string, string[]> | undefined;
  return {
    resolve: (id) => store.resolveId(id),
    matches(predictedId, goldId) {
      if (predictedId === goldId) return true;
      const concept = store.get(predictedId);
      return concept !== undefined && (concept.id === goldId || concept.altIds.includes(goldId));
    },
    idsMatchedBy(predictedId) {
      // What `matches` compares the gold id with, and nothing else.
      const concept = store.get(predictedId);
      return concept === undefined ? [predictedId] : [predictedId, concept.id, ...concept.altIds];
    },
    pathLength(a, b) {
      const d = hierarchy.pathLength(a, b);
      return Number.isFinite(d) ? d : undefined;
    },
    neighbourhoodSizes(id) {
      let sizes = neighbourhoods.get(id);
      if (!sizes) {
        sizes = { atOne: 0, atTwo: 0 };
        // Parents named but not defined in the KB are nodes of the hierarchy, not rankable concepts.
        for (const [other, d] of hierarchy.neighbourhood(id, 2)) {
          if (!store.has(other)) continue;
          if (d === 1) sizes.atOne++;
          else if (d === 2) sizes.atTwo++;
        }
        neighbourhoods.set(id, sizes);
      }
      return sizes;
    },
    conceptsMatching(goldId) {
      const gold = store.resolveId(goldId);
      if (gold === undefined) return [];
      if (!otherAltClaimants) {
        otherAltClaimants = new Map();
        for (const concept of store.values()) {
          for (const alt of concept.altIds) {
            if (store.resolveId(alt) === concept.id) continue;
            const claimants = otherAltClaimants.get(alt);
            if (claimants) claimants.push(concept.id);
            else otherAltClaimants.set(alt, [concept.id]);
          }
        }
      }
      // Keyed by the alt id as written, the way `matches` compares it.
      return [gold, ...(otherAltClaimants.get(goldId) ?? [])];
    },
    semanticTypes: (id) => store.get(id)?.semanticTypes ?? [],
  };
}

/** The KB an index directory was built from (its concepts file, as the linker reads it). */
export async function loadIndexKb(indexPath: string): Promise<ConceptStore> {
  // An index root (versions + CURRENT) resolves to the version the linkers open, so the KB judged against is theirs.
  const indexDir = resolveIndexDir(indexPath).dir;
  const manifest = readIndexManifest(indexDir);
  return loadKb([join(indexDir, manifest.files.concepts)], { format: 'jsonl' });
}
