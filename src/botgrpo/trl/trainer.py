"""``BoTGRPOTrainer``: TRL's ``GRPOTrainer`` with token-level advantages.

How it departs from ``trl.GRPOTrainer`` (everything else, generation with vLLM included, is
TRL's own code path):

1. Reward functions are wrapped (:mod:`botgrpo.trl.reward_adapter`): token reward functions
   (``TokenReward`` or per-token floats) mix with scalar ones; TRL sees each entry's outcome part
   and the token parts are kept for step 3. Scalars count as outcomes (``w_g * s``).
2. TRL's ``_generate_and_score_completions`` runs unchanged (generation, reference log-probs,
   TRL's own per-sequence advantages, logging).
3. Its per-sequence advantages are then replaced by the core estimator's [B, T] advantages on
   the token rewards (:mod:`botgrpo.trl.token_batch`), with group statistics gathered across
   processes, so a group split over processes gets the single-process advantages. TRL's loss
   takes [B, T] advantages as they are.
4. Estimators that read the sampling policy (``otb``) get its per-token log-probabilities and
   sums of squared probabilities through TRL's fused LM head, from TRL's old-policy pass when it
   makes one, else from one no-grad pass (:mod:`botgrpo.trl.policy_stats`); ``gae``
   (preset ppo) gets a learned critic's values (:mod:`botgrpo.trl.critic`).
5. Optional DAPO dynamic sampling (:mod:`botgrpo.trl.dynamic_sampling`).
6. Extra metrics ``bot/*`` (:mod:`botgrpo.trl.metrics`) go through TRL's ``report_to``.
"""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from typing import Any, ClassVar

import torch
from torch import Tensor
from trl import GRPOConfig, GRPOTrainer

from botgrpo.core import get_advantage_estimator
from botgrpo.loading import loading_on_this_thread
from botgrpo.scoring.entries import RewardOutputError
from botgrpo.trl import dynamic_sampling as ds
from botgrpo.trl import policy_stats
from botgrpo.trl.config import BoTGRPOConfig
from botgrpo.trl.metrics import gathered_step_metrics
from botgrpo.trl.reward_adapter import RewardAdapter, RewardBatch, adapt_reward_funcs
from botgrpo.trl.token_batch import TokenBatch, build_token_batch, group_ids, token_advantages


def _check_prompt_column(dataset: Any, name: str) -> None:
    """ValueError when ``dataset`` (a datasets.Dataset, or a dict of them for evaluation) has
    columns but no ``prompt`` one: TRL would fail at the first step, after loading the model."""
    parts = dataset.values() if isinstance(dataset, dict) else [dataset]
    for part in parts:
        columns = getattr(part, "column_names", None)
        if isinstance(columns, list) and "prompt" not in columns:
            raise ValueError(
                f"{name} has no 'prompt' column (its columns: {columns}); rename the column that "
                "holds the prompts, e.g. dataset.rename_column('question', 'prompt')"
            )


class BoTGRPOTrainer(GRPOTrainer):
    """Drop-in replacement of ``trl.GRPOTrainer`` that trains on token-level advantages.

    Takes exactly ``GRPOTrainer``'s arguments; ``args`` must be a :class:`BoTGRPOConfig`
    (default: ``BoTGRPOConfig(preset="bot")``). ``reward_funcs`` may mix TRL's scalar reward
    functions and reward models with token reward functions returning, per completion, a
    :class:`~botgrpo.rewards.types.TokenReward`, a list of per-token floats, a float or None.

    Attributes (besides GRPOTrainer's):
        last_token_batch: the :class:`~botgrpo.trl.token_batch.TokenBatch` (outcome, token parts,
            steps, bag mask) of the last scored round on this process, for inspection.
        reward_batch: the token parts recorded by the reward adapters for the current batch.

    Example::

        trainer = BoTGRPOTrainer(
            model="Qwen/Qwen2.5-3B-Instruct",
            reward_funcs=[step_reward, accuracy_reward],
            args=BoTGRPOConfig(output_dir="runs/bot", preset="bot", w_g=3.0, w_s=0.5),
            train_dataset=dataset,
        )
        trainer.train()
    """

    _tag_names: ClassVar[list[str]] = ["trl", "grpo", "botgrpo"]
    _name = "BoT-GRPO"
    _paper: ClassVar[dict[str, str]] = {
        "title": "BoT-GRPO: Efficient Process-Reward RL for Reasoning via Bag-of-Token Aggregation",
        "id": "2610.09804",
        "citation": textwrap.dedent("""\
            @article{yang2026botgrpo,
                title  = {{BoT-GRPO: Efficient Process-Reward RL for Reasoning via Bag-of-Token Aggregation}},
                author = {Yang and Xiao and Wang and Flashner and Agarwal},
                year   = 2026,
                eprint = {arXiv:2610.09804},
            }"""),
    }

    def __init__(
        self, model, reward_funcs=None, args: BoTGRPOConfig | None = None, *rest, **kwargs
    ):
        if args is None:
            name = model if isinstance(model, str) else model.config._name_or_path
            args = BoTGRPOConfig(f"{str(name).split('/')[-1]}-BoT-GRPO")
        if not isinstance(args, BoTGRPOConfig):
            kind = "trl.GRPOConfig" if isinstance(args, GRPOConfig) else type(args).__name__
            raise TypeError(
                f"BoTGRPOTrainer needs a botgrpo.trl.BoTGRPOConfig, got {kind}; BoTGRPOConfig "
                "takes every GRPOConfig option plus preset, advantage_estimator, w_g, w_s, ..."
            )
        for i, key in enumerate(("train_dataset", "eval_dataset")):
            _check_prompt_column(rest[i] if len(rest) > i else kwargs.get(key), key)
        self.reward_batch: RewardBatch | None = None  # token parts of the batch being scored
        self.last_token_batch: TokenBatch | None = None  # rewards of the last scored round
        self._rewards_per_func: Tensor | None = None  # TRL's gathered outcome columns
        self._capture_old_pass = False  # set while a round's old-policy pass may be read
        self._old_pass_stats: dict[str, Tensor] | None = None  # what that pass returned
        with loading_on_this_thread():  # the models TRL loads for it: see botgrpo.loading
            super().__init__(model, adapt_reward_funcs(reward_funcs, self), args, *rest, **kwargs)
        self._estimator = get_advantage_estimator(args.advantage_estimator)
        if args.dynamic_sampling:
            self._check_dynamic_sampling()
        self.critic = self._make_critic() if args.advantage_estimator == "gae" else None
        self.last_values_BT: Tensor | None = None  # the critic's values of the last round
        self._reads_policy = "sum_pi_sq_BT" in getattr(self._estimator, "options", ())
        if self._reads_policy:
            if getattr(self, "tools", None):
                raise ValueError(
                    "preset otb compares rollouts position by position, which tool outputs "
                    "inside completions shift; train without tools (verl packs the model's "
                    "tokens first: algorithm.adv_estimator=tir_optimal_token_baseline)"
                )
            self._add_sum_pi_sq_head()
        self.last_policy_stats: dict[str, Tensor] | None = None  # otb's inputs, last round

    # ---- rewards -------------------------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        """TRL's reward loop, recording token parts; reward models' scalars are outcomes too."""
        self.reward_batch = RewardBatch(completion_ids_list, self.accelerator.process_index)
        rewards_per_func = super()._calculate_rewards(
            inputs, prompts, completions, completion_ids_list
        )
        raw = [i for i, f in enumerate(self.reward_funcs) if not isinstance(f, RewardAdapter)]
        if raw:
            rewards_per_func[:, raw] = rewards_per_func[:, raw] * self.args.w_g
        self._rewards_per_func = rewards_per_func
        return rewards_per_func

    # ---- advantages ----------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = self._score_round(inputs)
        if self.model.training and self.args.dynamic_sampling:
            output = self._dynamic_sampling(output)
        return output

    def _score_round(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """One TRL generation-and-scoring round with its advantages replaced by [B, T] ones."""
        self._capture_old_pass = self._reads_policy and policy_stats.trl_makes_old_pass(self)
        self._old_pass_stats = None
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            self._capture_old_pass = False
        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        b = len(inputs)
        start = self.accelerator.process_index * b
        tool_mask = output.get("tool_mask")
        tb = build_token_batch(
            self.reward_batch,
            self._rewards_per_func[start : start + b],
            self.reward_weights,
            self.reward_func_names,
            output["completion_ids"].shape[1],
            tool_mask,
        )
        group_B = group_ids(self.accelerator.process_index, b, num_generations, tb.outcome_B.device)
        tb = self._check_steps_available(tb)
        options = self._estimator_options()
        if self.critic is not None:
            options["values_BT"] = self._critic_round(output, tb, options, mode)
        if self._reads_policy:
            options.update(self._policy_statistics(output, mode))
            if output.get("importance_sampling_ratio") is not None:  # vLLM's, as verl passes it
                ratio = output["importance_sampling_ratio"].float()
                options["is_weights_BT"] = ratio.expand_as(output["completion_ids"])
        adv_BT = token_advantages(
            self.args.advantage_estimator,
            tb,
            group_B,
            eps=self.args.advantage_eps,
            options=options,
            gather=self._gather,
        )
        if self.critic is not None and self.state.global_step < self.args.critic_warmup_steps:
            adv_BT = torch.zeros_like(adv_BT)  # the critic warms up; the policy waits
        loss_mask_BT = _loss_mask(output)
        output["advantages"] = adv_BT * loss_mask_BT
        self.last_token_batch = tb
        metrics = gathered_step_metrics(tb, adv_BT, loss_mask_BT, group_B, self._gather)
        for name, value in metrics.items():
            self._metrics[mode][name].append(value)
        return output

    # ---- the sampling policy's statistics (preset otb) --------------------------------------
    def _add_sum_pi_sq_head(self) -> None:
        policy_stats.add_sum_pi_sq_head(self)

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, *args, **kw):
        """TRL's chunked log-prob pass; the old-policy pass of a round (preset otb, when TRL
        makes one) also keeps the sums of squared probabilities its forwards return."""
        if not self._capture_old_pass or model is not self.model or torch.is_grad_enabled():
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, *args, **kw
            )
        self._capture_old_pass = False  # the round's first such pass; the rest are TRL's
        capture = policy_stats.OldPassCapture(model)
        try:
            result = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, *args, **kw
            )
        finally:
            capture.close()
        self._old_pass_stats = capture.result(result[0], attention_mask)
        return result

    def _policy_statistics(self, output: dict[str, Any], mode: str) -> dict[str, Tensor]:
        """OTB's inputs for this round's completions, from the policy that sampled them
        (:mod:`botgrpo.trl.policy_stats`): read from TRL's old-policy pass when it made one,
        else one no-grad pass of their own."""
        policy_stats.check_text_only(output)
        captured, self._old_pass_stats = self._old_pass_stats, None
        length_B = torch.tensor(self.reward_batch.lengths, device=output["completion_ids"].device)
        chunk = (
            self.args.per_device_train_batch_size
            if mode == "train"
            else self.args.per_device_eval_batch_size
        )
        stats = policy_stats.policy_statistics(self, output, length_B, chunk, captured)
        self.last_policy_stats = stats
        return stats

    # ---- the critic (preset ppo) ------------------------------------------------------------
    def _make_critic(self):
        from botgrpo.trl.critic import ValueCritic

        if self.accelerator.num_processes > 1:
            raise ValueError(
                "preset ppo (advantage_estimator gae) trains its critic in one process; run it "
                "on one device (it is a comparison baseline, not a distributed PPO engine)"
            )
        if self.args.dynamic_sampling:
            raise ValueError("preset ppo does not combine with dynamic_sampling")
        args = self.args
        return ValueCritic(
            args.critic_model or self.model.config._name_or_path,
            learning_rate=args.critic_learning_rate or args.learning_rate,
            value_clip=args.value_clip,
            epochs=args.critic_epochs,
            minibatch=args.per_device_train_batch_size,
            device=self.accelerator.device,
            max_grad_norm=args.max_grad_norm or 0.0,
        )

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        """TRL's ``train``; preset ppo cannot resume (its critic is not checkpointed)."""
        if self.critic is not None and resume_from_checkpoint:
            raise ValueError(
                "preset ppo cannot resume from a checkpoint: its critic is not saved with it, and "
                "a fresh value head would steer the policy at once; start the run again"
            )
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def _critic_round(self, output: dict[str, Any], tb: TokenBatch, options: dict, mode: str):
        """The critic's values of this round (for the GAE advantages) and, in training, one
        round of critic updates on the returns those values give."""
        from botgrpo.core.returns import gae

        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        width = output["completion_ids"].shape[1]
        values_BT = self.critic.values(ids, attention, width)
        self.last_values_BT = values_BT
        if mode == "train":
            defaults = inspect.signature(self._estimator.__wrapped__).parameters
            gamma = options.get("gamma", defaults["gamma"].default)  # the estimator's own
            lam = options.get("lam", defaults["lam"].default)
            _, returns_BT = gae(tb.return_rewards_BT, values_BT, tb.mask_BT, gamma, lam)
            seen_BT = tb.mask_BT & output["completion_mask"].bool()  # not masked truncations
            metrics = self.critic.update(ids, attention, seen_BT, values_BT, returns_BT)
            for name, value in metrics.items():
                self._metrics[mode][f"bot/{name}"].append(value)
        return values_BT

    @property
    def _gather(self):
        """``accelerator.gather`` with several processes, None (no communication) with one."""
        return self.accelerator.gather if self.accelerator.num_processes > 1 else None

    def _estimator_options(self) -> dict[str, Any]:
        options = dict(self.args.advantage_options or {})
        if "scale" in getattr(self._estimator, "options", ()) and "scale" not in options:
            options["scale"] = self.args.scale_rewards
        return options

    def _check_steps_available(self, tb: TokenBatch) -> TokenBatch:
        """Step estimators need steps; decided on all processes together (no one-sided raise).

        A process whose entries carry no steps (e.g. every entry None) while others do gets an
        all -1 step map, so it still joins the estimator's collective gather instead of raising
        alone and leaving the others waiting.
        """
        if "steps_BT" not in getattr(self._estimator, "options", ()):
            return tb
        has = torch.tensor(
            [tb.steps_BT is not None], dtype=torch.float32, device=tb.outcome_B.device
        )
        if self._gather is not None:
            has = self._gather(has)
        if not bool(has.any()):
            raise RewardOutputError(
                f"advantage estimator {self.args.advantage_estimator!r} reads step rewards, but no "
                "reward entry of this batch carries steps: add a token reward function returning "
                "TokenReward(steps=...)"
            )
        if tb.steps_BT is None:
            tb = dataclasses.replace(tb, steps_BT=torch.full_like(tb.mask_BT, -1, dtype=torch.long))
        return tb

    # ---- dynamic sampling (DAPO) ---------------------------------------------------------------
    def _check_dynamic_sampling(self) -> None:
        local_rows = self.args.per_device_train_batch_size * self.args.steps_per_generation
        if local_rows % self.num_generations:
            raise ValueError(
                "dynamic_sampling needs whole prompt groups on every process: "
                f"per_device_train_batch_size * steps_per_generation = {local_rows} must be a "
                f"multiple of num_generations = {self.num_generations}"
            )
        if not hasattr(self.train_dataset, "__getitem__") or not hasattr(
            self.train_dataset, "__len__"
        ):
            raise ValueError(
                "dynamic_sampling needs a map-style train_dataset (not an IterableDataset)"
            )

    def _dynamic_sampling(self, first: dict[str, Any]) -> dict[str, Any]:
        """Keep groups with signal; refill from fresh prompts until full or out of rounds."""
        k = self.num_generations
        need = first["completion_ids"].shape[0] // k
        kept, spare = [], []
        rounds, n_kept, n_seen = 0, 0, 0
        batch = first
        while True:
            signal_G = ds.group_signal(batch["advantages"], k).tolist()
            good = [g for g, s in enumerate(signal_G) if s][: need - n_kept]
            kept.append(ds.take_groups(batch, good, k))
            spare.append(ds.take_groups(batch, [g for g, s in enumerate(signal_G) if not s], k))
            n_kept, n_seen, rounds = n_kept + len(good), n_seen + len(signal_G), rounds + 1
            if rounds >= self.args.dynamic_sampling_max_rounds or not self._anyone_short(
                need - n_kept
            ):
                break
            batch = self._score_round(self._refill_inputs(rounds, len(first["completion_ids"])))
        padded = need - n_kept
        pad_id = self._tokenizer.pad_token_id
        parts = kept + ([_first_groups(spare, padded, k, pad_id)] if padded else [])
        merged = ds.concat_batches([p for p in parts if p["completion_ids"].shape[0]], pad_id)
        merged["num_items_in_batch"] = self.accelerator.gather(_loss_mask(merged).sum()).sum()
        for name, value in {
            "rounds": rounds,
            "padded_groups": padded,
            "kept_groups": n_kept,
        }.items():
            self._metrics["train"][f"bot/dynamic_sampling/{name}"].append(float(value))
        return merged

    def _anyone_short(self, shortfall: int) -> bool:
        short = torch.tensor([float(shortfall)], device=self.accelerator.device)
        if self._gather is not None:
            short = self._gather(short)
        return bool((short > 0).any())

    def _refill_inputs(self, round_: int, local_rows: int) -> list[dict[str, Any]]:
        k = self.num_generations
        n_processes = self.accelerator.num_processes
        prompts = ds.refill_prompt_indices(
            len(self.train_dataset),
            local_rows * n_processes // k,
            seed=self.args.seed,
            step=self.state.global_step,
            round_=round_,
        )
        rows = [j for j in prompts for _ in range(k)]
        start = self.accelerator.process_index * local_rows
        return [self.train_dataset[j] for j in rows[start : start + local_rows]]


def _first_groups(
    parts: list[dict[str, Any]], n_groups: int, k: int, pad_id: int
) -> dict[str, Any]:
    """The first ``n_groups`` groups across ``parts`` (zero-signal groups used as padding)."""
    merged = ds.concat_batches([p for p in parts if p["completion_ids"].shape[0]], pad_id)
    return ds.take_groups(merged, list(range(n_groups)), k)


def _loss_mask(output: dict[str, Tensor]) -> Tensor:
    mask = output["completion_mask"]
    return mask if output.get("tool_mask") is None else mask * output["tool_mask"]
