"""texkit's examples: one folder per task (script, YAML config, README), run from the repository
root as modules, e.g.

    python -m examples.bert_classifier.train --config examples/bert_classifier/config.yaml

``examples.common`` holds what several examples share (the BBC news and Bible corpora with their
fixed splits, the translation pipeline, the command line of every example).

texkit is imported first, while ``sys.argv[0]`` is still ``"-m"``: it keeps TensorFlow's C++ log
lines out of every example's output (``texkit._quiet``), unless ``--verbose`` on the command line
or ``TF_CPP_MIN_LOG_LEVEL`` asks for them.
"""

import texkit  # noqa: F401
