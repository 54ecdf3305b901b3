"""Philox4x32-10, the counter-based generator behind every random draw of the engine.

Pinned by the published known-answer vectors (Random123 kat_vectors), by an independent
reference implementation on random inputs, and by cheap statistical sanity checks.
"""
import numpy as np
import pytest

KAT = [  # counter[4], key[2] -> output[4]
    ([0x00000000, 0x00000000, 0x00000000, 0x00000000], [0x00000000, 0x00000000],
     [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], [0xFFFFFFFF, 0xFFFFFFFF],
     [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]
M = 2**32 - 1


def philox_reference(ctr, key, rounds=10):
    """Philox4x32-R as specified by Salmon et al. (SC'11), in plain Python."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & M, (k1 + 0xBB67AE85) & M
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M, (p0 >> 32) ^ c3 ^ k1, p0 & M
    return [c0, c1, c2, c3]


@pytest.fixture(scope="module")
def philox(engine):
    return engine.philox4x32_10


@pytest.mark.parametrize("ctr,key,expected", KAT, ids=["zeros", "ones", "pi"])
def test_known_answer_vectors(philox, ctr, key, expected):
    assert [int(x) for x in philox(ctr, key)] == expected


@pytest.mark.parametrize("ctr,key,expected", KAT, ids=["zeros", "ones", "pi"])
def test_reference_implementation_matches_vectors(ctr, key, expected):
    # guards the reference used below
    assert philox_reference(ctr, key) == expected


def test_matches_reference_on_random_inputs(philox):
    rng = np.random.default_rng(12345)
    words = rng.integers(0, 2**32, size=(300, 6), dtype=np.uint64)
    for w in words:
        ctr, key = [int(x) for x in w[:4]], [int(x) for x in w[4:]]
        assert [int(x) for x in philox(ctr, key)] == philox_reference(ctr, key), (ctr, key)


def _stream(philox, n_blocks, key=(17, 42)):
    """n_blocks * 4 output words for consecutive counters (i, 0, 0, 0), as uint32."""
    out = [philox([i, 0, 0, 0], list(key)) for i in range(n_blocks)]
    return np.array(out, dtype=np.uint64).astype(np.uint32).ravel()


def test_outputs_are_uniform(philox):
    """Top byte of 32768 consecutive-counter words: chi-square over 256 bins, and bit balance."""
    x = _stream(philox, 8192)
    n = x.size
    counts = np.bincount(x >> 24, minlength=256)
    expected = n / 256
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    # 255 degrees of freedom: mean 255, sd sqrt(510) = 22.6; 6 sd either side is p < 1e-6
    assert 255 - 6 * 22.6 < chi2 < 255 + 6 * 22.6 + 40, chi2
    # every bit is set in half of the words: binomial sd sqrt(n)/2, allow 5 sd
    bits = (x[:, None] >> np.arange(32, dtype=np.uint32)) & 1
    ones = bits.sum(axis=0)
    assert np.all(np.abs(ones - n / 2) < 5 * np.sqrt(n) / 2), ones
    # uniform on [0, 1): mean 1/2 (sd 1/sqrt(12 n)), no repeated words among 32768
    u = x / 2.0**32
    assert abs(u.mean() - 0.5) < 5 / np.sqrt(12 * n)
    assert np.unique(x).size > n - 5       # 32768 draws from 2^32: about 0.1 collisions expected


def test_avalanche(philox):
    """Flipping one input bit flips about half of the 128 output bits."""
    rng = np.random.default_rng(7)
    dists = []
    for _ in range(200):
        w = [int(v) for v in rng.integers(0, 2**32, size=6, dtype=np.uint64)]
        ctr, key = w[:4], w[4:]
        base = philox(ctr, key)
        bit = int(rng.integers(0, 192))
        if bit < 128:
            ctr = list(ctr)
            ctr[bit // 32] ^= 1 << (bit % 32)
        else:
            key = list(key)
            key[(bit - 128) // 32] ^= 1 << (bit % 32)
        flipped = philox(ctr, key)
        dists.append(sum(bin(int(a) ^ int(b)).count("1") for a, b in zip(base, flipped)))
    dists = np.array(dists)
    # each output bit flips with probability 1/2: mean 64, sd of the mean sqrt(32/200) = 0.4
    assert abs(dists.mean() - 64) < 5 * 0.4, dists.mean()
    assert dists.min() > 30


def _scalar_block(philox, ctr, key):
    return philox(list(ctr), list(key))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 15, 16, 17, 24, 25, 31, 33, 40, 47])
def test_vectorised_lanes_and_series_match_the_scalar_generator(engine, n):
    """The drive's and the build's vectorised Philox (AVX-512 where the CPU has it; AVX2 in two
    interleaved groups of 8, the last 1-15 lanes as one partial group of 16 or 8) give exactly
    the scalar generator's blocks, whatever lane a counter lands in."""
    key = [0x1234567, 0x89ABCDEF]
    ids = [(7 + 1000003 * i) | ((i % 3) << 32) for i in range(n)]
    out = np.asarray(engine.philox_lanes(ids, 3, 5, 42, 1, key), dtype=np.uint64).reshape(4, n)
    for i, g in enumerate(ids):
        ctr = [g & 0xFFFFFFFF, ((g >> 32) & 0xFF) | (5 << 8) | (3 << 24), 42, 1]
        assert out[:, i].tolist() == _scalar_block(engine.philox4x32_10, ctr, key)
    for word in (2, 3):
        base = [11, 22, 33, 44]
        out = np.asarray(engine.philox_series(base, word, n, key), dtype=np.uint64).reshape(4, n)
        for i in range(n):
            ctr = list(base)
            ctr[word] += i
            assert out[:, i].tolist() == _scalar_block(engine.philox4x32_10, ctr, key)


def test_both_kernel_sets_agree(engine):
    """Where the CPU has AVX-512 the tests above ran those kernels; run them again at the AVX2
    level (as an engine of simd = "avx2" sets it) in a fresh process so the AVX2 paths are
    checked as well."""
    import subprocess
    import sys
    code = ("import ranvier._engine as e, numpy as np; e.use_simd('avx2'); k=[1,2]; ids=list(range(5,45));"
            "o=np.asarray(e.philox_lanes(ids,3,1,2,0,k)).reshape(4,40);"
            "print(e.simd_kernels(), all(o[:,i].tolist()==e.philox4x32_10([g,(1<<8)|(3<<24),2,0],k) "
            "for i,g in enumerate(ids)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["avx2", "True"]


def _counts_reference(words, thresholds):
    """The drive's Poisson count of each word: the thresholds it reaches, the word capped at
    2^32 - 2 (PoissonTable::thresholds)."""
    capped = np.minimum(np.asarray(words, dtype=np.uint64), 2**32 - 2)
    return (capped[:, None] >= np.asarray(thresholds, dtype=np.uint64)[None, :]).sum(axis=1)


@pytest.mark.parametrize("size", [1, 7, 8, 9, 15, 16, 17, 40, 1003])
def test_poisson_counts_match_plain_compares(engine, size):
    """The count kernels (AVX-512 in 16s, AVX2 in 8s, a scalar tail; each machine runs what it
    has) against plain compares, at the edges: thresholds of 0, 1, 2^32 - 2 and 2^32 - 1, words
    at and next to each threshold, 0 and 2^32 - 1."""
    rng = np.random.default_rng(size)
    for trial in range(60):
        pool = np.array([0, 1, 2**32 - 2, 2**32 - 1], dtype=np.uint64)
        thresholds = np.sort(np.where(rng.random(10) < 0.4, rng.choice(pool, 10),
                                      rng.integers(0, 2**32, 10, dtype=np.uint64)))
        near = (rng.choice(thresholds, size).astype(np.int64) + rng.integers(-1, 2, size)) % 2**32
        words = np.where(rng.random(size) < 0.5, near, rng.integers(0, 2**32, size, dtype=np.uint64))
        words[rng.random(size) < 0.1] = 2**32 - 1
        counts = np.array(engine.poisson_counts([int(w) for w in words], [int(t) for t in thresholds]))
        expected = _counts_reference(words, thresholds)
        assert np.array_equal(counts, expected), (trial, thresholds, words[counts != expected])


def test_poisson_counts_refuse_a_short_table(engine):
    with pytest.raises(ValueError, match="thresholds"):
        engine.poisson_counts([1, 2, 3], [0] * 9)
