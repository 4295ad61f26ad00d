/** OBO synonym scopes. EXACT and RELATED are kept by default: NARROW/BROAD names denote other concepts. */
export type SynonymScope = 'EXACT' | 'RELATED' | 'NARROW' | 'BROAD';

export const ALL_SYNONYM_SCOPES: readonly SynonymScope[] = ['EXACT', 'RELATED', 'NARROW', 'BROAD'];
export const DEFAULT_SYNONYM_SCOPES: readonly SynonymScope[] = ['EXACT', 'RELATED'];

/** OBO-Graph JSON synonym predicates → scope. */
export const OBOGRAPH_SCOPE: Readonly<Record<string, SynonymScope>> = {
  hasExactSynonym: 'EXACT',
  hasRelatedSynonym: 'RELATED',
  hasNarrowSynonym: 'NARROW',
  hasBroadSynonym: 'BROAD',
};
