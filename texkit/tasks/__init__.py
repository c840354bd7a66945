"""Task models: text in, text out.

A task owns its preprocessor (the family's in-graph tokenizer) and its module, and offers what a
user does with a pretrained model: generate text, classify, fine-tune (fully or with LoRA),
quantize for inference and export back to Hugging Face's format.
"""

__all__: list[str] = []
