"""What GPU time and energy cost: a small YAML file a lab admin writes (`--prices FILE`).

    currency: EUR          # optional, shown beside the figures
    gpu_hour:              # per GPU-hour held, by model as NVML names it
      NVIDIA A100-SXM4-80GB: 2.50
      default: 1.00        # every other model; without it, other models have no price
    kwh: 0.30              # per kWh of the held GPUs' energy; optional
"""

from __future__ import annotations

from dataclasses import dataclass

from hwinfo import inputs

_KEYS = ("currency", "gpu_hour", "kwh")
# A price is money per hour or per kWh: a million is already absurd.
MAX_PRICE = 1e6


@dataclass(frozen=True)
class Prices:
    gpu_hour: dict[str, float]
    kwh: float | None
    currency: str

    def per_gpu_hour(self, model: str) -> float | None:
        return self.gpu_hour.get(model, self.gpu_hour.get("default"))


def _price(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise inputs.InputError(f"{where}: expected a number, got {inputs.shown(value)}")
    if not 0 <= value <= MAX_PRICE:  # NaN fails it too; isfinite() overflows on 400 digits
        raise inputs.InputError(f"{where}: {inputs.shown(value)} is not a price between 0 and "
                                f"{MAX_PRICE:g}")
    return float(value)


def load_prices(path: str) -> Prices:
    """The prices in `path`, or InputError: one line naming the file and the field."""
    doc = inputs.parse_yaml(inputs.read_text(path, path, 1024 * 1024), path)
    if not isinstance(doc, dict):
        raise inputs.InputError(f"{path}: expected a mapping with gpu_hour and kwh")
    for key in doc:
        if key not in _KEYS:
            raise inputs.InputError(f"{path}: {inputs.member('', key)}: unknown key "
                                    f"(known: {', '.join(_KEYS)})")
    table = doc.get("gpu_hour", {})
    if not isinstance(table, dict):
        raise inputs.InputError(f"{path}: gpu_hour: expected a mapping of model to price")
    gpu_hour = {str(model): _price(price, f"{path}: {inputs.member('gpu_hour', model)}")
                for model, price in table.items()}
    kwh = None if doc.get("kwh") is None else _price(doc["kwh"], f"{path}: kwh")
    if not gpu_hour and kwh is None:
        raise inputs.InputError(f"{path}: no prices (give gpu_hour, kwh or both)")
    currency = doc.get("currency", "")
    if not isinstance(currency, str) or len(currency) > 8 or not currency.isprintable():
        raise inputs.InputError(f"{path}: currency: expected a short name such as EUR or $")
    return Prices(gpu_hour, kwh, currency)
