import torch
import torch.nn as nn
import torch.nn.functional as F

# Knowledge-distillation loss (Hinton et al.): KL(teacher || student) between the
# temperature-softened distributions, batch mean, scaled by T^2. Returns a 0-dim tensor.
BATCH = 8192
CLASSES = 8192
TEMPERATURE = 2.0


class Model(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.t = temperature

    def forward(self, student_logits, teacher_logits):
        log_p_student = F.log_softmax(student_logits / self.t, dim=-1)
        log_p_teacher = F.log_softmax(teacher_logits / self.t, dim=-1)
        kl = F.kl_div(log_p_student, log_p_teacher, reduction="batchmean", log_target=True)
        return kl * (self.t * self.t)


def get_inputs():
    # Random per-call logit scales, so the batch-mean loss differs clearly between trials.
    student = torch.randn(BATCH, CLASSES) * (1.0 + 3.0 * torch.rand(()))
    teacher = torch.randn(BATCH, CLASSES) * (1.0 + 3.0 * torch.rand(()))
    return [student, teacher]


def get_init_inputs():
    return [TEMPERATURE]
