"""Fine-tuning on the labelled set: train a head, ELMo's layer mix, the top layers, LoRA adapters or the whole
model, and see what training did to each layer.

One concept per module:

* :mod:`lib.finetune.data` — the stratified, seeded split into train, validation and test, and the tasks (token,
  [CLS], mean);
* :mod:`lib.finetune.default_task` — the page's default task: real CoarseWSD-20 sentences of a word chosen from a
  measurement;
* :mod:`lib.finetune.methods` — the five methods, each explained in two sentences (``METHODS``);
* :mod:`lib.finetune.heads` — the classifier head and the layer mix (torch modules);
* :mod:`lib.finetune.recipe` — :class:`~lib.finetune.recipe.Recipe`, what decides the weights, as a short key;
* :mod:`lib.finetune.backbone` — the one place that knows the model's insides (layers, shared copies, peft);
* :mod:`lib.finetune.train` — the training loop (progress per epoch, cancel, the random-label control);
* :mod:`lib.finetune.baseline` — the frozen head on the same split, the floor every run is read against;
* :mod:`lib.finetune.compare` — pretrained vs fine-tuned per layer (linear CKA with its floor band, weight
  change, separation, anisotropy);
* :mod:`lib.finetune.verdict` — the result in plain words beside the head, with the course's remedies;
* :mod:`lib.finetune.seeds` — the same run, and the head, under several seeds;
* :mod:`lib.finetune.model` — the fine-tuned model as the pretrained model's own class (Encoder, Decoder);
* :mod:`lib.finetune.cost` — the memory a run holds, for the work queue;
* :mod:`lib.finetune.run` — all of it in one call (:func:`~lib.finetune.run.finetune`);
* ``python -m lib.finetune`` — the command line.

Importing the package imports nothing heavy (torch loads when a run starts).
"""
