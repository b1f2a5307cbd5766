"""BoT-GRPO inside verl: token-level advantages and per-token rewards, as a pip-installed plugin.

``pip install 'botgrpo[verl]'`` registers an entry point in verl's ``verl.plugins`` group, so every
process that imports verl (the driver, the Ray TaskRunner, the workers) gets botgrpo's advantage
estimators in verl's registry. Two lines of config switch a verl run to BoT-GRPO:

    algorithm.adv_estimator=bot
    +actor_rollout_ref.rollout.agent.agent_loop_manager_class=botgrpo.verl.agent_loop.BoTAgentLoopManager

plus the reward functions under ``+botgrpo.*`` (see :mod:`botgrpo.verl.config`). Modules:

- :mod:`botgrpo.verl.plugin`: the entry point; registers the estimators and records any failure;
- :mod:`botgrpo.verl.estimators`: verl-signature wrappers around :mod:`botgrpo.core`;
- :mod:`botgrpo.verl.config`: the ``botgrpo`` config section (reward functions, w_g, w_s, ...);
- :mod:`botgrpo.verl.reward_hook`: writes each rollout's per-token reward row (``rm_scores``);
- :mod:`botgrpo.verl.agent_loop`: verl's agent loop worker and manager with the hook, and the
  checks run at trainer start.

See docs/verl.md.
"""
