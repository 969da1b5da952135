// Golden test vectors for the SimHash fingerprint (FNV-1a 32 feature hash +
// xorshift32 sign bits), produced by running the JavaScript reference
// implementation below, copied verbatim from the algorithm's reference page.
//
// Output: tests/data/golden_fingerprints.json, one case per line:
//   {"weights": [[feature, weight], ...], "bits": b, "seed": s,
//    "fingerprint": "<lowercase hex, zero-padded to ceil(b/4) digits>",
//    "fnv1a": [fnv1a(feature + ':' + seed) for each feature, same order]}
// `weights` is listed in the order Object.entries() yields it for the object
// that was fingerprinted (array-index keys such as "7" come first, in
// ascending numeric order), which is the order the reference sums in.
// Bit i of the fingerprint (value 2**i) is accumulator slot i.
//
// Regenerate from the repository root (needs Node.js >= 16, no packages):
//   node tests/data/make_golden.mjs > tests/data/golden_fingerprints.json
// The output is fully deterministic: all randomness comes from the seeded
// PRNG below (Math.random is never used). The first eight cases are read from
// sample_corpus/doc0.txt .. doc7.txt, so editing those files changes them.
// The Python test suite only reads the JSON; it never runs this script.

import { readFileSync } from 'node:fs';

// ---------------------------------------------------------------------------
// Reference implementation (verbatim).
// ---------------------------------------------------------------------------

function fnv1a(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
function xorshift32(seed) {
  let s = seed >>> 0 || 1;
  return function next() {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
}
function featureBits(feature, seed, b) {
  const rng = xorshift32(fnv1a(feature + ':' + seed));
  const bits = new Array(b);
  let word = 0, have = 0;
  for (let i = 0; i < b; i++) {
    if (have === 0) { word = rng(); have = 32; }
    bits[i] = word & 1;
    word >>>= 1; have--;
  }
  return bits;
}
function fingerprint(weightedVec, b, seed) {
  const acc = new Array(b).fill(0);
  for (const [feature, weight] of Object.entries(weightedVec)) {
    const bits = featureBits(feature, seed, b);
    for (let i = 0; i < b; i++) acc[i] += bits[i] ? weight : -weight;
  }
  let fp = 0n;
  for (let i = 0; i < b; i++) if (acc[i] > 0) fp |= (1n << BigInt(i));
  return fp;
}

// ---------------------------------------------------------------------------
// Deterministic PRNG for choosing test inputs (mulberry32; unrelated to the
// xorshift32 under test).
// ---------------------------------------------------------------------------

let prngState = 0x5eed1234;
function rand32() {
  prngState = (prngState + 0x6d2b79f5) >>> 0;
  let t = prngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
}
const randInt = (lo, hi) => lo + (rand32() % (hi - lo + 1)); // inclusive; bias irrelevant here
const pick = (arr) => arr[rand32() % arr.length];
const chance = (p) => rand32() / 4294967296 < p;
const randBelow2p53 = () => (rand32() & 0x1fffff) * 4294967296 + rand32();

// ---------------------------------------------------------------------------
// Parameters and feature pools.
// ---------------------------------------------------------------------------

const BITS = [1, 3, 8, 16, 31, 32, 33, 63, 64, 65, 100, 128, 256, 512];
const SEEDS = [
  0, 1, 2, 42, 12345,
  2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 1,
  randBelow2p53(), randBelow2p53(), randBelow2p53(), randBelow2p53(), randBelow2p53(),
];

const POOLS = {
  ascii: [
    'the', 'cat', 'dog', 'bread', 'dough', 'oven', 'morning', 'routine', 'star', 'telescope',
    'tax', 'return', 'hiking', 'trail', 'summit', 'a', 'I', 'Word', 'word', 'WORD',
    'near-duplicate', "don't", 'snake_case', 'CamelCase', 'x', 'zz', 'hello world', ' ', '\t',
    'tab\there', 'line\nbreak', 'quote"inside', 'back\\slash', 'constructor', 'toString',
    'hasOwnProperty', 'valueOf', '__proto__', 'NaN', 'undefined', 'null', 'true',
  ],
  latin: [
    'caf\u00e9', 'cafe\u0301', '\u00e9', 'e\u0301', 'stra\u00dfe', 'strasse', '\u00df', '\u1e9e',
    'ni\u00f1o', 'nin\u0303o', '\u00f1', 'n\u0303', '\u00c5ngstr\u00f6m', 'A\u030angstro\u0308m',
    '\u212bngstr\u00f6m', 'na\u00efve', 'fa\u00e7ade', 'ma\u00f1ana', 'se\u00f1or', '\u00fcber',
    'u\u0308ber', '\ufb01sh', 'fish', '\uff21\uff22\uff23', '\u0131', '\u0130stanbul', '\u0153uvre',
    '\u00e6sthetic', 'cr\u00e8me br\u00fbl\u00e9e', '\u00d8resund',
  ],
  cjk: [
    '\u4e2d\u6587', '\u6587\u672c', '\u91cd\u590d', '\u68c0\u6d4b', '\u76f8\u4f3c', '\u4e2d',
    '\u6f22\u5b57', '\u65e5\u672c', '\u3053\u3093\u306b\u3061\u306f', '\u3072\u3089\u304c\u306a',
    '\u30ab\u30bf\u30ab\u30ca', '\u30c6\u30b9\u30c8', '\uff83\uff7d\uff84', '\ud55c\uad6d\uc5b4',
    '\uc548\ub155', '\ud558\uc138\uc694', '\ud55c', '\u1112\u1161\u11ab', '\u3131', '\u3000',
  ],
  thai: ['\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22', '\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35',
    '\u0e01', '\u0e02\u0e49\u0e32\u0e27'],
  astral: [
    '\u{1f600}', '\u{1d4b3}', '\u{2000b}', '\u{1f44d}\u{1f3fd}', '\u{1f468}\u200d\u{1f469}\u200d\u{1f467}',
    '\u{1f1ef}\u{1f1f5}', '\u{1d518}\u{1d52b}\u{1d526}', 'a\u{1f600}b', '\u{1f600}\u{1f600}',
    '\u{10000}', '\u{10ffff}', '\u{1f9d1}\u{1f3fb}\u200d\u{1f4bb}', '\u{20bb7}\u91ce\u5bb6',
    '\u2764\ufe0f', '\u{e0067}',
  ],
  cyrillic: ['\u043f\u0440\u0438\u0432\u0435\u0442', '\u041c\u043e\u0441\u043a\u0432\u0430',
    '\u0451\u043b\u043a\u0430', '\u0435\u0308\u043b\u043a\u0430', '\u0441\u0430t',
    '\u0434\u0443\u0431\u043b\u0438\u043a\u0430\u0442'],
  rtl: ['\u0645\u0631\u062d\u0628\u0627', '\u0627\u0644\u0639\u0631\u0628\u064a\u0629',
    '\u0643\u0650\u062a\u064e\u0627\u0628', '\u05e9\u05dc\u05d5\u05dd', '\u200f\u0627\u200e'],
  colon: [':', '::', 'a:b', 'key:value', 'http://example.com/a?b=c', ':12345', 'word:',
    'x:0', '12345:', 'a:b:c:d'],
  digits: ['0', '7', '123', '4294967294', '4294967295', '4294967296', '01', '-1', '1.5',
    '1e3', ' 7', '9007199254740993', '00', '12345'],
  odd: ['', '\u0000', '\u0000x', '\ufeff', '\u00a0', '\u200b', '\ufffd', '\u007f', '\r\n'],
};
const POOL_NAMES = Object.keys(POOLS);
const ALL_FEATURES = POOL_NAMES.flatMap((n) => POOLS[n]);

// Long features (500+ UTF-16 code units), built only from whole code points so
// no lone surrogates are produced (those have their own cases below).
const LONG_FEATURES = (() => {
  const cps = [...'abcdefghijklmnopqrstuvwxyz \u00e9\u00df\u4e2d\u6587\u043f\u0645\u0e2a\u{1f600}\u{2000b}\u{1d4b3}'];
  const mixed = Array.from({ length: 700 }, () => pick(cps)).join('');
  return [
    'a'.repeat(500),
    'ab'.repeat(400),
    'x'.repeat(1000) + ':' + 'y'.repeat(24),
    mixed,
    '\u{1f600}'.repeat(300),
    '\u4e2d\u6587'.repeat(260),
    'lorem ipsum dolor sit amet '.repeat(40),
  ];
})();

// ---------------------------------------------------------------------------
// Weights.
// ---------------------------------------------------------------------------

function randomWeight() {
  const r = rand32() % 100;
  if (r < 70) return randInt(1, 20);                        // term count
  if (r < 80) return 1 + Math.log(randInt(1, 50));          // sublinear tf
  if (r < 90) return randInt(1, 9) * Math.log(1000 / randInt(1, 999)); // tf-idf-like
  if (r < 94) return randInt(1, 999) / 100;                 // short decimal
  if (r < 97) return -randInt(1, 10);                       // negative
  return 0;                                                 // zero
}

// ---------------------------------------------------------------------------
// Case construction.
// ---------------------------------------------------------------------------

// Build an object with own enumerable data properties in the given insertion
// order (defineProperty so that "__proto__" becomes an ordinary key).
function makeVec(pairs) {
  const obj = {};
  for (const [k, w] of pairs) {
    Object.defineProperty(obj, k, { value: w, enumerable: true, writable: true, configurable: true });
  }
  return obj;
}

const cases = [];
const isLoneSurrogate = (s) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

function addCase(pairs, b, seed, allowLoneSurrogates = false) {
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`bad seed ${seed}`);
  const vec = makeVec(pairs);
  const entries = Object.entries(vec);
  for (const [k, w] of entries) {
    if (isLoneSurrogate(k) && !allowLoneSurrogates) throw new Error('lone surrogate in feature');
    if (!Number.isFinite(w)) throw new Error('non-finite weight');
  }
  const fp = fingerprint(vec, b, seed);
  cases.push({
    weights: entries,
    bits: b,
    seed,
    fingerprint: fp.toString(16).padStart(Math.ceil(b / 4), '0'),
    fnv1a: entries.map(([k]) => fnv1a(k + ':' + seed)),
  });
}

function randomPairs(n, pool = ALL_FEATURES) {
  const pairs = [];
  for (let i = 0; i < n; i++) pairs.push([pick(pool), randomWeight()]);
  return pairs; // repeated features collapse in the object: last weight wins
}

// 1. Sample corpus: lower-cased [a-z]+ word counts of sample_corpus/doc0..doc7,
//    b = 32, seed 12345 (the configuration of the reference page's demo).
for (let d = 0; d < 8; d++) {
  const text = readFileSync(new URL(`../../sample_corpus/doc${d}.txt`, import.meta.url), 'utf8');
  const counts = new Map();
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  addCase([...counts], 32, 12345);
}

// 2. Grid: every bit width x every seed, random mixed features.
for (const b of BITS) {
  for (const seed of SEEDS) addCase(randomPairs(randInt(1, 12)), b, seed);
}

// 3. Every pooled feature alone with weight 1 (bits and seeds cycle).
ALL_FEATURES.forEach((f, i) => addCase([[f, 1]], BITS[i % BITS.length], SEEDS[(i * 5) % SEEDS.length]));

// 4. Single-script documents with term counts.
for (const name of POOL_NAMES) {
  for (const b of [64, 128]) {
    addCase(POOLS[name].map((f) => [f, randInt(1, 20)]), b, pick(SEEDS));
  }
}

// 5. Long features.
LONG_FEATURES.forEach((f, i) => {
  addCase([[f, 1]], BITS[(i * 3 + 2) % BITS.length], SEEDS[i % SEEDS.length]);
  addCase([[f, 2], ['short', 1], [LONG_FEATURES[(i + 1) % LONG_FEATURES.length], 1.5]], 64, 12345);
});

// 6. Empty weights object: fingerprint 0 at several widths.
for (const b of [1, 8, 32, 64, 65, 512]) addCase([], b, pick(SEEDS));

// 7. Exact cancellation: a slot whose total is exactly 0 must give bit 0.
for (const b of [8, 32, 64, 100, 256]) {
  const seed = pick(SEEDS);
  const [f1, f2, f3] = [pick(ALL_FEATURES), pick(POOLS.ascii), pick(POOLS.cjk)];
  addCase([[f1, 3], [f2, 3]], b, seed);                       // slots where the bits differ sum to 0
  addCase([[f1, 3], [f2, -3]], b, seed);                      // slots where the bits agree sum to 0
  addCase([[f1, 2.5], [f2, 2.5], [f3, 5]], b, seed);
  addCase([[f1, 0.1], [f2, 0.2], [f3, 0.3]], b, seed);        // +-0.1 +-0.2 +-0.3: rounding residues
}

// 8. Zero and negative weights.
for (const b of [16, 64, 128]) {
  const seed = pick(SEEDS);
  const f = pick(ALL_FEATURES);
  addCase([[f, 1]], b, seed);
  addCase([[f, -1]], b, seed);                                // complement of the previous case
  addCase([[f, 0]], b, seed);                                 // all slots 0 -> fingerprint 0
  addCase([[f, 0], [pick(POOLS.latin), 4]], b, seed);
  addCase([[pick(POOLS.ascii), -2.5], [pick(POOLS.astral), -1], [pick(POOLS.rtl), 7]], b, seed);
}

// 9. Object.entries ordering: array-index keys ("0".."4294967294") come first
//    in ascending numeric order; "4294967295", "01", "-1", "1.5" stay in
//    insertion order with the other strings.
const DIGIT_ORDER_INSERTION = ['b', '4294967295', '123', 'a', '7', '4294967294', '0', '01', '-1',
  '4294967296', '1.5', '12345'];
for (const b of [32, 64, 128]) {
  addCase(DIGIT_ORDER_INSERTION.map((k) => [k, randInt(1, 20)]), b, pick(SEEDS));
}
//    Summation order matters in floating point: 1 + 2**53 rounds to 2**53, so in
//    entries order ("7" first) slots with +1, +2**53, -2**53 end at exactly 0,
//    whereas the insertion order (big weights first) would leave +1.
for (const b of [32, 64]) {
  addCase([['big', 2 ** 53], ['neg', -(2 ** 53)], ['7', 1]], b, 12345);
  addCase([['big', 2 ** 53], ['neg', 2 ** 53], ['7', 1]], b, 0);
}

// 10. Many features per document at large widths.
for (const b of [64, 128, 256, 512, 100]) {
  addCase(randomPairs(200, [...ALL_FEATURES, ...POOLS.ascii.map((w) => w + '2'), ...LONG_FEATURES]), b, pick(SEEDS));
}

// 11. fnv1a zero-hash fallback: xorshift32 maps state 0 to 1, so a feature
//     with fnv1a(feature + ':' + seed) === 0 gets exactly the bits of one with
//     fnv1a === 1. Found by meet-in-the-middle over 8 lowercase letters: FNV-1a
//     steps are invertible (h' = (h ^ c) * P, P odd), so hash 4-letter prefixes
//     forward and unwind 4-letter suffixes + ':' + seed backward from the target.
const FNV_PRIME_INV = 0x359c449b; // inverse of 0x01000193 mod 2**32
function featureWithHash(target, seed) {
  if (Math.imul(FNV_PRIME_INV, 0x01000193) >>> 0 !== 1) throw new Error('bad inverse');
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const words4 = [];
  for (const a of letters) for (const b of letters) for (const c of letters) for (const d of letters) words4.push(a + b + c + d);
  const forward = new Map();
  for (const w of words4) if (!forward.has(fnv1a(w))) forward.set(fnv1a(w), w); // fnv1a(w) is the state after w
  const unwind = (h, s) => {
    for (let i = s.length - 1; i >= 0; i--) h = (Math.imul(h, FNV_PRIME_INV) ^ s.charCodeAt(i)) >>> 0;
    return h;
  };
  const afterFeature = unwind(target >>> 0, ':' + seed);
  for (const w of words4) {
    const prefix = forward.get(unwind(afterFeature, w));
    if (prefix !== undefined) {
      const feature = prefix + w;
      if (fnv1a(feature + ':' + seed) !== target) throw new Error('search bug');
      return feature;
    }
  }
  return null;
}
const zeroHashFeatures = [];
for (const seed of [12345, 0]) {
  const zero = featureWithHash(0, seed);
  const one = featureWithHash(1, seed);
  if (zero === null || one === null) continue;
  zeroHashFeatures.push(`"${zero}" (seed ${seed})`);
  for (const b of [32, 64, 512]) {
    addCase([[zero, 1]], b, seed);
    addCase([[one, 1]], b, seed);                          // same fingerprint as the line above
  }
  addCase([[zero, 2], [one, -2]], 64, seed);               // every slot cancels -> 0
  addCase([[zero, 3], ['cat', 1], ['\u4e2d\u6587', 2]], 128, seed);
}

// 12. Lone surrogates (legal in JavaScript strings; charCodeAt returns the
//     single code unit). A high surrogate followed by a low one is a pair.
for (const [i, f] of ['\ud83d', 'a\ude00', '\ude00\ud83d', 'x\udbff\udbffy'].entries()) {
  addCase([[f, 1]], BITS[(i * 4 + 1) % BITS.length], SEEDS[(i * 3 + 4) % SEEDS.length], true);
  addCase([[f, 2], ['\u{1f600}', 1], ['cat', 1]], 64, 12345, true);
}

// 13. Extra cases at the reference page's demo configuration (b = 32, seed 12345).
addCase([['cat', 3], ['morning', 2], ['routine', 1]], 32, 12345);
addCase([['caf\u00e9', 1], ['cafe\u0301', 1]], 32, 12345);
addCase([['\u{1f600}', 5], ['\u4e2d\u6587', 3], ['', 1]], 32, 12345);

// ---------------------------------------------------------------------------
// Self-check and output.
// ---------------------------------------------------------------------------

for (const c of cases) {
  const again = fingerprint(makeVec(c.weights), c.bits, c.seed).toString(16).padStart(Math.ceil(c.bits / 4), '0');
  if (again !== c.fingerprint) throw new Error('entries order is not stable');
}

const description = [
  'Golden SimHash fingerprints from the JavaScript reference implementation, generated by',
  'tests/data/make_golden.mjs (regenerate: node tests/data/make_golden.mjs > tests/data/golden_fingerprints.json).',
  "Algorithm: for each [feature, weight] in the listed order, h = FNV-1a 32 over the UTF-16 code units of",
  "feature + ':' + decimal(seed); xorshift32 seeded with h (state 0 becomes 1) yields 32-bit words whose bits,",
  'least significant first, give sign bits for slots 0..bits-1; slot i accumulates +weight for bit 1 and',
  '-weight for bit 0 in IEEE double precision, in list order; fingerprint bit i (value 2**i) is set iff slot i > 0',
  '(a slot summing to exactly 0 gives 0). fingerprint is lowercase hex zero-padded to ceil(bits/4) digits;',
  "fnv1a lists the 32-bit hash of feature + ':' + seed for each feature, in order.",
  'weights is in JavaScript Object.entries order (array-index keys first, ascending) and is the summation order;',
  'treat weights as doubles (four cases use +-2**53, where summation order and float rounding decide the result).',
  'Non-ASCII characters are written as \\u escapes so precomposed and combining-mark forms survive editing;',
  'a few features hold lone surrogates (hashed as the single code unit, as charCodeAt does). Cases 0-7 are lower-cased [a-z]+ word counts of sample_corpus/doc0-7.txt',
  'at bits 32, seed 12345.',
  zeroHashFeatures.length
    ? `Zero-hash fallback: features with fnv1a(feature + ':' + seed) == 0 are included: ${zeroHashFeatures.join(', ')}; each is paired with a feature whose hash is 1, which must give the same fingerprint.`
    : 'No input with fnv1a == 0 was found, so the zero-hash fallback is not covered.',
].join(' ');

const asciiJson = (v) => JSON.stringify(v).replace(/[\u007f-\uffff]/g,
  (ch) => '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0'));

process.stdout.write(
  `{"description": ${asciiJson(description)}, "cases": [\n` +
  cases.map(asciiJson).join(',\n') +
  '\n]}\n',
);
