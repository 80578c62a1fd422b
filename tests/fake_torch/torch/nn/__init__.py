from torch.nn import modules  # noqa: F401
from torch.nn.modules.module import Module  # noqa: F401
from torch.nn import parallel  # noqa: F401,E402
