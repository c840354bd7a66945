"""The seqgan example's --quick mode: three stages through tx.run.Trainer, and its figures
recomputed independently (NLL with NumPy from the model's logits, BLEU with sacrebleu)."""

from __future__ import annotations

import numpy as np
import sacrebleu

from examples.seqgan import train as seqgan


def numpy_held_out_nll(model, dataset):
    """Per token and per verse, in float64 from the logits of each batch."""
    total, tokens, verses = 0.0, 0, 0
    for features in dataset:
        logits = model(features, training=False).numpy().astype(np.float64)
        top = logits.max(-1, keepdims=True)
        log_probs = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
        labels = features["text_ids"].numpy()[:, 1:]
        picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
        lengths = features["length"].numpy() - 1
        valid = np.arange(labels.shape[1])[None, :] < lengths[:, None]
        total -= picked[valid].sum()
        tokens += int(valid.sum())
        verses += len(labels)
    return total / tokens, total / verses


def sacrebleu_against_all(hypotheses, references, order):
    metric = sacrebleu.metrics.BLEU(
        tokenize="none", smooth_method="none", max_ngram_order=order, force=True
    )
    streams = [[reference] * len(hypotheses) for reference in references]
    return metric.corpus_score(hypotheses, streams).score


def test_seqgan_quick_mode_trains_three_stages_reports_exact_figures_and_resumes(tmp_path):
    result = seqgan.main(["--quick", f"run.model_dir={tmp_path / 'run'}", "run.verbose=0"])
    histories = result["histories"]
    assert histories["mle"]["loss"][-1] < histories["mle"]["loss"][0]
    for stage, steps in (("mle", 6), ("discriminator", 2), ("adversarial", 2)):
        assert (tmp_path / "run" / stage / f"ckpt-{steps}.index").exists(), stage
    assert set(histories["adversarial"]) >= {"loss", "pg_loss", "baseline_loss", "d_loss"}
    # The figures are the last model's: after the adversarial stage.
    model, data = result["model"], result["data"]
    per_token, per_verse = numpy_held_out_nll(model, data["test"])
    nll = result["adversarial"]["nll"]
    np.testing.assert_allclose(nll["per_token"], per_token, rtol=1e-5)
    np.testing.assert_allclose(nll["per_verse"], per_verse, rtol=1e-5)
    np.testing.assert_allclose(nll["perplexity"], np.exp(per_token), rtol=1e-5)
    # The MLE model (6 steps on 400 verses) is already better than a uniform guess.
    assert result["mle"]["nll"]["per_token"] < np.log(data["vocab"].size)
    samples = result["adversarial"]["samples"]
    assert len(samples) == 16
    hypotheses = [s if s.strip() else "<empty>" for s in samples]
    for order in (2, 3, 4):
        expected = sacrebleu_against_all(hypotheses, data["verses"]["test"], order)
        np.testing.assert_allclose(result["adversarial"]["bleu"][order], expected, atol=1e-9)
    real = sacrebleu_against_all(data["verses"]["dev"], data["verses"]["test"], 2)
    np.testing.assert_allclose(result["dev_bleu"][2], real, atol=1e-9)
    # Run again on the same folder: every stage resumes from its last checkpoint, trains no
    # more, and the figures are the same.
    again = seqgan.main(["--quick", f"run.model_dir={tmp_path / 'run'}", "run.verbose=0"])
    assert all(not history for history in again["histories"].values())
    for stage in ("mle", "adversarial"):
        assert again[stage]["nll"] == result[stage]["nll"]
        assert again[stage]["samples"] == result[stage]["samples"]
