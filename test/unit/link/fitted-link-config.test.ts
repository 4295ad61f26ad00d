import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fittedLinkConfig, linkConfigDifferences } from '../../../src/link/fitted-link-config.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';

// The link cache's sizes never change a link (link-config.ts, docs/stream.md "Link cache"): a
// calibration fit under one size reads the same features under any other, so a linker run with
// the cache off (CUILINK_LINK_CACHE_ENTRIES=0) or resized must not be told its confidence may be off.
test('the link cache sizes are no setting a calibration was fit under', () => {
  const fittedUnderDefaults = fittedLinkConfig(parseLinkConfig({}));
  assert.deepEqual(linkConfigDifferences(fittedUnderDefaults, parseLinkConfig({ cache: { maxEntries: 0 } })), []);
  assert.deepEqual(linkConfigDifferences(fittedUnderDefaults, parseLinkConfig({ cache: { maxEntries: 5, maxBytes: 1024 } })), []);
  // A file written before this fix recorded the sizes it was fit with: they are ignored as well.
  const recordedWithSizes = { ...fittedUnderDefaults, cache: { maxEntries: 0, maxBytes: 1 } };
  assert.deepEqual(linkConfigDifferences(recordedWithSizes, parseLinkConfig({})), []);
  assert.equal('cache' in fittedUnderDefaults, false, 'not recorded in new files');
  // Settings that move the features are still named.
  assert.deepEqual(linkConfigDifferences(recordedWithSizes, parseLinkConfig({ cache: { maxEntries: 9 }, topK: 7 })), ['topK']);
});
