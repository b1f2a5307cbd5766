"""The sampling policy's per-token statistics that OTB reads (preset ``otb``).

    logp_BT[b, t] = log pi(y_t | y_<t),   sum_pi_sq_BT[b, t] = sum_v pi(v | y_<t)^2

at the sampling temperature (the full softmax: top-k/top-p truncation is not modelled, as in
verl), from TRL's fused LM head re-patched to return ``log_sum_sq_probs`` too (the vocabulary
is scored in tiles, so no second [B, T, V] tensor exists).

Where they come from: verl computes both in its old-log-prob pass. TRL makes that pass only when
the samples may be off-policy (generation not aligned with optimizer steps, ``num_iterations >
1``) or under vLLM's importance-sampling correction; then :class:`OldPassCapture` reads the sums
from that very pass and only rows it did not attend in full (truncations that
``mask_truncated_completions`` zeroed) are scored again. On-policy TRL makes no such pass, and
:func:`score_rows` makes one no-grad pass, chunked like TRL's own.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def add_sum_pi_sq_head(trainer) -> None:
    """Re-patch TRL's fused LM head of ``trainer.model`` so it also returns log(sum_v pi_v^2)."""
    from accelerate.utils import is_peft_model
    from trl.trainer.utils import add_fused_lm_head

    model = trainer.model
    add_fused_lm_head(
        model.get_base_model() if is_peft_model(model) else model,
        temperature=trainer.temperature,
        cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32,
        outputs=("log_probs", "entropy", "log_sum_sq_probs"),
    )


def trl_makes_old_pass(trainer) -> bool:
    """Whether TRL's ``_generate_and_score_completions`` computes old-policy log-probs (its own
    condition, so the first no-grad pass of the policy in a round is that one)."""
    generate_every = trainer.args.steps_per_generation * trainer.num_iterations
    return trainer.args.gradient_accumulation_steps % generate_every != 0 or bool(
        trainer.use_vllm and trainer.vllm_importance_sampling_correction
    )


class OldPassCapture:
    """Collects ``log_sum_sq_probs`` from the forward calls of one chunked log-prob pass.

    Used around TRL's ``_get_per_token_logps_and_entropies``: a forward hook on the model keeps
    each chunk's sums; :meth:`result` pairs them with the log-probs TRL returned."""

    def __init__(self, model) -> None:
        self._chunks: list[Tensor] = []
        self._handle = model.register_forward_hook(self._keep)

    def _keep(self, module, inputs, output) -> None:
        self._chunks.append(output.log_sum_sq_probs.detach().float())

    def close(self) -> None:
        self._handle.remove()

    def result(self, logps_BT: Tensor, attention_mask: Tensor) -> dict[str, Tensor]:
        width = logps_BT.shape[1]
        squares = torch.cat([c[:, -width:] for c in self._chunks]).exp()
        return {
            "logp_BT": logps_BT.detach().float(),
            "sum_pi_sq_BT": squares,
            "attended_BT": attention_mask[:, -width:].bool(),
            "source": logps_BT,  # what TRL returned: read only if it is the round's old pass
        }


def check_text_only(output: dict[str, Any]) -> None:
    """ValueError for what OTB's position-by-position baseline cannot take."""
    if any(output.get(k) is not None for k in ("pixel_values", "image_grid_thw")):
        raise ValueError("preset otb supports text-only models (the batch has images)")
    if output.get("tool_mask") is not None:
        raise ValueError("preset otb does not support tool outputs inside completions")


def policy_statistics(
    trainer, output: dict[str, Any], length_B: Tensor, chunk: int, captured: dict | None
) -> dict[str, Tensor]:
    """OTB's inputs for every sampled token of the round (truncated completions included: TRL
    may have zeroed their mask, but they still belong to their group's baseline), from the
    captured old-policy pass where it attended the row in full, from :func:`score_rows`
    elsewhere.

    A capture counts only if TRL stored its result as the round's ``old_per_token_logps`` (so a
    reference pass is never read as the policy's). Every process scores the same number of
    rows (its own, padded with repeats), so sharded models (ZeRO-3, FSDP), whose every forward
    is a collective, stay in step."""
    width = output["completion_ids"].shape[1]
    device = length_B.device
    sampled_BT = torch.arange(width, device=device)[None, :] < length_B[:, None]
    if captured is not None and output.get("old_per_token_logps") is not captured["source"]:
        captured = None
    if captured is None:
        return score_rows(trainer, output, sampled_BT, torch.arange(len(length_B)), chunk)
    stats = {k: captured[k].clone() for k in ("logp_BT", "sum_pi_sq_BT")}
    missing = (sampled_BT & ~captured["attended_BT"]).any(dim=1).nonzero().flatten()
    count = torch.tensor([missing.numel()], device=device)
    if trainer.accelerator.num_processes > 1:
        count = trainer.accelerator.gather(count)
    most = int(count.max())
    if most:
        rows = torch.cat([missing, missing.new_zeros(most - missing.numel())])  # pad: row 0
        again = score_rows(trainer, output, sampled_BT, rows, chunk)
        for key, value in again.items():
            stats[key][missing] = value[: missing.numel()]
    return stats


def score_rows(
    trainer, output: dict[str, Any], sampled_BT: Tensor, rows: Tensor, chunk: int
) -> dict[str, Tensor]:
    """One no-grad pass of the policy over the completions ``rows`` (their sampled tokens
    attended), in chunks of ``chunk`` rows."""
    from trl.models.utils import disable_gradient_checkpointing

    model = trainer.model
    width = sampled_BT.shape[1]
    ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)[rows]
    prompt_mask = output["prompt_mask"][rows]
    attention = torch.cat([prompt_mask, sampled_BT[rows].to(prompt_mask)], dim=1)
    logps, squares = [], []
    with (
        torch.no_grad(),
        disable_gradient_checkpointing(model, trainer.args.gradient_checkpointing_kwargs),
    ):
        for start in range(0, ids.shape[0], chunk):
            ids_b, mask_b = ids[start : start + chunk], attention[start : start + chunk]
            labels = ids_b.masked_fill(mask_b == 0, -100)
            labels[:, :-width] = -100
            with trainer.accelerator.autocast():
                out = model(
                    input_ids=ids_b, attention_mask=mask_b, labels=labels, fused_lm_head=True
                )
            logps.append(out.log_probs[:, -width:].float())
            squares.append(out.log_sum_sq_probs[:, -width:].float().exp())
    return {"logp_BT": torch.cat(logps), "sum_pi_sq_BT": torch.cat(squares)}
