"""Unit tests of train.py's data path and models, with torch but without DDP or a launch:
`/usr/bin/python3 -m unittest test_train` in testbed/ (about 2 s)."""

import time
import unittest

try:
    import torch
    from torch.utils.data import DataLoader

    import faults
    import train
except ImportError:  # the interpreter has no torch: the testbed cannot run here at all
    torch = None


def loader(fault, faulty, onset_iter, iters, micro_batches=1, workers=0, seq_len=8):
    sampler = train.FaultAwareBatchSampler(iters, micro_batches, fault, faulty, onset_iter, seq_len,
                                           seed=0, rank=0)
    return DataLoader(train.SyntheticDataset(0, 0, fault), batch_sampler=sampler, num_workers=workers,
                      collate_fn=train.Collate(fault))


@unittest.skipIf(torch is None, "no torch in this interpreter")
class DataPathTest(unittest.TestCase):
    def test_the_fault_is_on_for_the_batches_of_its_iterations(self):
        fault = faults.make_fault("imbalance_seq", {"seq_factor": 2})
        sampler = train.FaultAwareBatchSampler(4, 2, fault, True, 2, 8, seed=0, rank=0)
        batches = list(sampler)
        self.assertEqual(len(batches), 8)  # 4 iterations x 2 micro-batches
        self.assertEqual([b[0][2] for b in batches], [False] * 4 + [True] * 4)
        self.assertEqual([b[0][1] for b in batches], [8] * 4 + [16] * 4)  # longer sequences from the onset
        self.assertEqual({len(b) for b in batches}, {train.BASE_BATCH_SIZE})  # the same batch size
        healthy = train.FaultAwareBatchSampler(4, 1, faults.NoFault(), False, 2, 8, seed=0, rank=0)
        self.assertFalse(any(key[2] for b in healthy for key in b))

    def test_slow_workers_slow_the_loader_from_the_onset_only(self):
        # Two worker processes, forked before the onset: the fault reaches them with the batch.
        fault = faults.make_fault("loader_workers_slow", {"getitem_ms": 5})
        waits = []
        batches = iter(loader(fault, True, onset_iter=5, iters=9, workers=2))
        for _ in range(9):
            started = time.perf_counter()
            dense, tokens, labels = next(batches)
            waits.append(time.perf_counter() - started)
        self.assertEqual(tuple(tokens.shape), (train.BASE_BATCH_SIZE, 8))
        # From the onset (batch 5), each batch costs a worker 32 x 5 ms: 4 batches are 640 ms of
        # work for two workers, at least 320 ms of wall time, of which the training process,
        # consuming at once, waits for most (as a prefetching loader does: a long wait, then a
        # batch the other worker had ready). Before it, once each worker has started (batches 0
        # and 1 wait for a worker process to start: 0.07-0.26 s here beside a clean-clone CI
        # run), the batches come from the queue: a wait per batch under a quarter of the faulty
        # batches' (relative: on a loaded machine the workers are queued for a CPU too).
        self.assertGreater(sum(waits[5:9]), 0.2)
        self.assertLess(sum(waits[2:5]) / 3, 0.25 * sum(waits[5:9]) / 4, waits)

    def test_models_train_on_their_batches(self):
        for name, seq_len in (("mlp", 16), ("transformer", 16), ("transformer", 32), ("cnn", 16)):
            model = train.make_model(name)
            dense, tokens, labels = next(iter(loader(faults.NoFault(), False, 0, 1, seq_len=seq_len)))
            out = model(dense, tokens)
            self.assertEqual(tuple(out.shape), (train.BASE_BATCH_SIZE, train.NUM_CLASSES), name)
            torch.nn.functional.cross_entropy(out, labels).backward()
        # The transformer's gradient bytes do not depend on the sequence (shapes-only imbalance).
        embedding = train.make_model("transformer").embedding.weight
        self.assertEqual(embedding.numel() * 4, 4 * 1024 * 1024)
        # The conv net's batch norm keeps running statistics: buffers DDP broadcasts every forward.
        self.assertTrue(any(True for _ in train.make_model("cnn").buffers()))
        with self.assertRaises(ValueError):
            train.make_model("resnet")


if __name__ == "__main__":
    unittest.main()
