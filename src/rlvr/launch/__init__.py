"""Scale-out: Accelerate/DeepSpeed launch, cluster environment detection, SageMaker jobs.

- :mod:`rlvr.launch.configs`: the shipped Accelerate configs (ddp, zero1-3, fsdp) by name.
- :mod:`rlvr.launch.cluster`: environment (SageMaker, torchrun, Slurm) -> launch arguments.
- :mod:`rlvr.launch.accelerate`: the exact ``accelerate launch ... -m rlvr train`` command.
- :mod:`rlvr.launch.engines`: checks that the generation engine a recipe asks for can run here.
- :mod:`rlvr.launch.sagemaker`: a SageMaker training job request as plain data, and its submission.
"""
