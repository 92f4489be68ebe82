"""Running a unit elsewhere: the files a job engine needs to run ``agentd run UNIT``.

- ``kubernetes``: a ConfigMap (the unit file, rewritten for the pod), a
  ``ReadWriteOncePod`` PersistentVolumeClaim (``AGENTD_HOME`` and the workdir)
  and a ``batch/v1`` Job per unit, plus a kustomization; ``podunit`` rewrites
  the unit file for the pod and finds the secrets it must not carry;
  ``podfailure`` is the Job's ``podFailurePolicy`` and Kubernetes' documented
  way of applying it, ``checks`` what the API server would refuse that the
  published schemas do not say (enums, exit codes, names);
- ``slurm``: an sbatch script that requeues itself when the run was interrupted.

The mapping from ``agentd run``'s exit status (``agentd.exitcodes``) to what the
engine does is the point of both. Pure but for reading the unit's file and
asking git for the workdir's remote: a unit in, text out; no cluster and no
client library. May import ``agentd.config``, ``agentd.memory`` (git),
``agentd.session.redact`` (which names are secrets) and the shared leaves.
"""
