"""Every Vulkan device, what it offers the kernels, and which one vkdelegate picks and why."""
import json


def add_arguments(parser):
    parser.add_argument("--json", action="store_true", help="print the devices as JSON")


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} B"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def run(args) -> int:
    import vkdelegate.runtime as rt
    from vkdelegate.cli.common import CliError

    if not rt.is_available():
        raise CliError(f"no usable Vulkan device: {rt.unavailable_reason()}")
    devices = rt.list_devices()
    choice = rt.device_info()["choice"]
    if args.json:
        print(json.dumps({"devices": devices, "choice": choice}, indent=2))
        return 0
    for d in devices:
        mark = "*" if d["chosen"] else " "
        print(f"{mark} [{d['index']}] {d['name']} ({d['type']}, Vulkan {d['api_version']})")
        if d["error"]:
            print(f"      cannot be used as described: {d['error']}")
            continue
        rows = [
            ("driver", d["driver"] or "-"),
            ("subgroup size", f"{d['subgroup_size']}" + (" (arithmetic)" if d["subgroup_arithmetic"] else "")),
            ("shared memory", _size(d["max_shared_memory"])),
            ("max storage-buffer range", _size(d["max_storage_buffer_range"])),
            ("workgroup", f"{d['max_workgroup_invocations']} invocations, sizes {d['max_workgroup_size']}"),
            ("fp16", f"{_yes(d['shader_float16'])} (16-bit storage: {_yes(d['storage_16bit'])})"),
            ("int8 arithmetic", _yes(d["shader_int8"])),
            ("int64", _yes(d["shader_int64"])),
            ("integer dot product", _yes(d["integer_dot_product"])),
            ("cooperative matrix", _yes(d["cooperative_matrix"]) + (
                f" ({', '.join(d['cooperative_matrix_shapes'])})" if d["cooperative_matrix_shapes"] else "")
             + (", NV cooperative_matrix2" if d["cooperative_matrix2"] else "")),
            ("GPU timestamps", _yes(d["timestamps"])),
        ]
        if d["profile"]:
            rows.append(("device profile", f"{d['profile']} (limits and features lowered to it)"))
        for key, value in rows:
            print(f"      {key:26s} {value}")
    print(f"picked: [{next(d['index'] for d in devices if d['chosen'])}] "
          f"{next(d['name'] for d in devices if d['chosen'])}: {choice}")
    return 0
