"""Convolutional networks in plain torch, written from the papers' descriptions:
MobileNetV2, ResNet-18, ResNet-50 and a small UNet. Seeded random weights; batch
norm statistics are randomized too, so that inference-mode batch norm is not an
identity.

The global average pool is an avg_pool2d over the whole feature map (what
AdaptiveAvgPool2d(1) computes), written so that it exports to one pooling op.
"""
import torch
from torch import nn
from torch.nn import functional as F


def _randomize_batch_norms(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)


class GlobalAvgPool(nn.Module):
    """[N, C, H, W] -> [N, C]: the mean over H and W."""

    def forward(self, x):
        return torch.flatten(F.avg_pool2d(x, kernel_size=tuple(x.shape[-2:])), 1)


def conv_bn(cin, cout, kernel, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


# ---------------------------------------------------------------- MobileNetV2


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
                   conv_bn(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    # (expansion, channels, repeats, first stride)
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes=1000, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        layers = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)]
        cin = 32
        for expand, cout, repeats, stride in self.SETTINGS:
            for i in range(repeats):
                layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
                cin = cout
        layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.pool = GlobalAvgPool()
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))
        _randomize_batch_norms(self)

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)))

    @staticmethod
    def example_inputs(batch=1):
        torch.manual_seed(1)
        return (torch.randn(batch, 3, 224, 224),)


# ---------------------------------------------------------------- ResNet


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(conv_bn(cin, width, 3, stride), conv_bn(width, cout, 3, act=None))
        self.shortcut = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride),
                                  conv_bn(width, cout, 1, act=None))
        self.shortcut = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, block, repeats, num_classes=1000, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        stages, cin = [], 64
        for i, (width, n) in enumerate(zip((64, 128, 256, 512), repeats)):
            for j in range(n):
                stages.append(block(cin, width, 2 if j == 0 and i > 0 else 1))
                cin = width * block.expansion
        self.stages = nn.Sequential(*stages)
        self.pool = GlobalAvgPool()
        self.fc = nn.Linear(cin, num_classes)
        _randomize_batch_norms(self)

    def forward(self, x):
        return self.fc(self.pool(self.stages(self.stem(x))))

    @staticmethod
    def example_inputs(batch=1):
        torch.manual_seed(1)
        return (torch.randn(batch, 3, 224, 224),)


def resnet18(seed=0):
    return ResNet(BasicBlock, (2, 2, 2, 2), seed=seed)


def resnet50(seed=0):
    return ResNet(Bottleneck, (3, 4, 6, 3), seed=seed)


# ---------------------------------------------------------------- UNet


def double_conv(cin, cout):
    return nn.Sequential(conv_bn(cin, cout, 3), conv_bn(cout, cout, 3))


class UNet(nn.Module):
    """Two downsamplings (max pool), a bottleneck, two upsamplings (bilinear
    upsample, then a transposed conv) each concatenated with the skip."""

    def __init__(self, in_channels=3, out_channels=2, width=16, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        w = width
        self.enc1 = double_conv(in_channels, w)
        self.enc2 = double_conv(w, 2 * w)
        self.bottleneck = double_conv(2 * w, 4 * w)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2 = double_conv(4 * w + 2 * w, 2 * w)
        self.up1 = nn.ConvTranspose2d(2 * w, w, 2, stride=2)
        self.dec1 = double_conv(2 * w, w)
        self.head = nn.Conv2d(w, out_channels, 1)
        _randomize_batch_norms(self)

    def forward(self, x):
        s1 = self.enc1(x)
        s2 = self.enc2(F.max_pool2d(s1, 2))
        b = self.bottleneck(F.max_pool2d(s2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), s2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), s1], dim=1))
        return self.head(d1)

    @staticmethod
    def example_inputs(batch=2):
        torch.manual_seed(1)
        return (torch.randn(batch, 3, 64, 64),)
