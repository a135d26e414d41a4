"""A generator image is built from its install kind's shared Dockerfile (tools/_docker/), with build args
from the tool's manifest, or from the tool's own tools/<id>/Dockerfile when it has one (harness/runtimes/images.py
docker_build); the Docker runtime hands both to compose.yaml."""
import fcntl
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness import DOCKER_DIR, TOOLS_DIR
from harness.errors import HarnessError
from harness.runtimes.docker import DockerRuntime
from harness.runtimes.images import KIND_DOCKERFILES, KIND_TOOLCHAINS, docker_build
from harness.tools.manifest import read_manifest

FOLDERS = sorted(p.parent for p in TOOLS_DIR.glob("*/adapter.py"))
SHARED = sorted((TOOLS_DIR / "_docker").glob("*.Dockerfile"))
STAGED = [folder for folder in FOLDERS if "INSTALLED" in docker_build(folder).args]   # installed in a build stage


def build_args(dockerfile: Path) -> set[str]:
    return set(re.findall(r"^ARG (\w+)", dockerfile.read_text(), re.MULTILINE))


def tool_folder(parent: Path, name: str, manifest: str, dockerfile: str | None = None) -> Path:
    folder = parent / name
    folder.mkdir()
    (folder / "tool.toml").write_text(manifest)
    if dockerfile is not None:
        (folder / "Dockerfile").write_text(dockerfile)
    return folder


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_tool_resolves_to_a_dockerfile_that_takes_its_build_args(folder: Path):
    build = docker_build(folder)
    dockerfile = TOOLS_DIR / build.dockerfile
    assert dockerfile.is_file(), f"{folder.name}: {dockerfile} does not exist"
    assert set(build.args) <= build_args(dockerfile), f"{dockerfile} does not declare every build arg {build.args}"
    assert build.args["TOOL"] == folder.name


@pytest.mark.parametrize("folder", STAGED, ids=lambda p: p.name)
def test_a_build_stage_copies_what_the_adapter_runs(folder: Path):
    manifest, installed = read_manifest(folder), docker_build(folder).args["INSTALLED"]
    ran = manifest.get("home") or manifest["binary"]
    assert Path(ran).is_relative_to(installed), (ran, installed)


def test_every_install_kind_has_a_shared_dockerfile_and_its_toolchain_script():
    assert {TOOLS_DIR / "_docker" / f"{name}.Dockerfile" for name in KIND_DOCKERFILES.values()} == set(SHARED)
    assert all((TOOLS_DIR / "_lib" / script).is_file() for script in KIND_TOOLCHAINS.values())
    # every kind built in a stage shares its toolchain's layer (the Dockerfile copies _lib/*-toolchain.sh)
    staged = {kind for kind, dockerfile in KIND_DOCKERFILES.items() if dockerfile == "build-stage"}
    assert staged == set(KIND_TOOLCHAINS) and all(s.endswith("-toolchain.sh") for s in KIND_TOOLCHAINS.values())
    kinds = {read_manifest(folder)["kind"] for folder in FOLDERS}
    assert kinds <= set(KIND_DOCKERFILES), kinds - set(KIND_DOCKERFILES)


@pytest.mark.parametrize("dockerfile", SHARED, ids=lambda p: p.name)
def test_compose_passes_every_build_arg_of_the_shared_dockerfiles(dockerfile: Path):
    compose = (DOCKER_DIR / "compose.yaml").read_text()
    for arg in build_args(dockerfile):
        assert f"{arg}: ${{LTH_{arg}:-" in compose, f"compose.yaml does not pass {dockerfile.name}'s ARG {arg}"


def test_the_build_args_are_the_manifests(tmp_path: Path):
    java = tool_folder(tmp_path, "javatool", 'kind = "maven"\nbinary = "java"\nhome = "/opt/lth/javatool"\n'
                                             'runtime_packages = "openjdk-17-jre-headless ca-certificates"\n')
    gotool = tool_folder(tmp_path, "gotool", 'kind = "go"\nbinary = "/opt/lth/bin/gotool"\n')
    placed = tool_folder(tmp_path, "placed", 'kind = "npm"\nbinary = "/opt/x/bin/node"\nhome = "/opt/x"\n'
                                             'installed = "/opt/x/dist"\n')
    debian = tool_folder(tmp_path, "debtool", 'kind = "apt"\nbinary = "debtool"\n')
    assert docker_build(java).args == {"TOOL": "javatool", "RUNTIME_PACKAGES": "openjdk-17-jre-headless ca-certificates",
                                       "INSTALLED": "/opt/lth/javatool", "TOOLCHAIN": "maven-toolchain.sh"}
    assert docker_build(gotool).args == {"TOOL": "gotool", "RUNTIME_PACKAGES": "", "INSTALLED": "/opt/lth/bin",
                                         "TOOLCHAIN": KIND_TOOLCHAINS["go"]}
    assert docker_build(placed).args["INSTALLED"] == "/opt/x/dist"
    (gotool / "prebuilt").mkdir()
    (gotool / "prebuilt" / "gotool").write_bytes(b"\x7fELF")      # the host's compiled binary: no toolchain layer
    assert docker_build(gotool).args["TOOLCHAIN"] == ""
    assert docker_build(debian).args == {"TOOL": "debtool", "RUNTIME_PACKAGES": ""}
    assert docker_build(debian).dockerfile == f"_docker/{KIND_DOCKERFILES['apt']}.Dockerfile"


def test_a_tool_with_its_own_dockerfile_uses_it(tmp_path: Path):
    own = tool_folder(tmp_path, "own", 'kind = "go"\nbinary = "/opt/lth/bin/own"\n', dockerfile="FROM scratch\n")
    assert docker_build(own).dockerfile == "own/Dockerfile"


def test_no_dockerfile_and_no_shared_one_says_what_to_do(tmp_path: Path):
    odd = tool_folder(tmp_path, "odd", 'kind = "brew"\nbinary = "odd"\n')
    with pytest.raises(HarnessError, match="odd: no Dockerfile, and install kind 'brew' has no shared one"):
        docker_build(odd)
    nowhere = tool_folder(tmp_path, "nowhere", 'kind = "cargo"\nbinary = "nowhere"\n')
    with pytest.raises(HarnessError, match="set `installed`"):
        docker_build(nowhere)


def test_the_runtime_builds_with_the_tools_dockerfile_and_args(monkeypatch: pytest.MonkeyPatch):
    calls: list[dict[str, str]] = []

    def compose(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        calls.append(kwargs["env"])
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr("harness.runtimes.docker.run", compose)
    monkeypatch.setattr("harness.runtimes.docker.image_id", lambda image: "")       # never built here
    monkeypatch.setattr("harness.runtimes.docker.record_build", lambda image, inputs: None)
    runtime = DockerRuntime()
    runtime._compose_cmd = ["docker-compose"]
    folder = STAGED[0]
    build, inputs = runtime._stale("generator", folder, None)     # stale: never built here
    assert runtime._build("generator", folder, None, build, inputs, "1/1") is None
    assert build == docker_build(folder)
    assert calls[0]["LTH_DOCKERFILE"] == build.dockerfile
    assert {arg: calls[0][f"LTH_{arg}"] for arg in build.args} == build.args


def test_a_tool_without_a_dockerfile_is_a_problem_not_a_crash(tmp_path: Path):
    odd = tool_folder(tmp_path, "odd", 'kind = "brew"\nbinary = "odd"\n')
    problem, _ = DockerRuntime()._stale("generator", odd, None)
    assert "no Dockerfile" in problem


def test_an_image_is_built_again_only_when_what_it_is_built_from_changed(tmp_path, monkeypatch):
    """harness.runtimes.docker.build_inputs: the build's files (not the ones tools/.dockerignore keeps out),
    arguments and base image; a suite skips the build of an image made from the same inputs."""
    from harness.runtimes import docker
    monkeypatch.setattr(docker, "image_id", lambda image: {"base": "sha256:b", "lth-tool-x:latest": "sha256:x"}[image])
    monkeypatch.setattr(docker, "BUILDS_FILE", tmp_path / "builds.json")
    folder = tmp_path / "x"
    (folder / "node_modules").mkdir(parents=True)
    (folder / "install.sh").write_text("echo 1")
    inputs = docker.build_inputs("base", [folder], {"TOOL": "x"})
    (folder / "node_modules" / "big.js").write_text("ignored, as by .dockerignore")
    assert docker.build_inputs("base", [folder], {"TOOL": "x"}) == inputs
    assert docker.build_inputs("base", [folder], {"TOOL": "y"}) != inputs
    assert docker.built_from("lth-tool-x:latest") is None
    docker.record_build("lth-tool-x:latest", inputs)
    assert docker.built_from("lth-tool-x:latest") == inputs
    (folder / "install.sh").write_text("echo 2")
    assert docker.build_inputs("base", [folder], {"TOOL": "x"}) != inputs
    monkeypatch.setattr(docker, "image_id", lambda image: "sha256:rebuilt-by-hand")
    assert docker.built_from("lth-tool-x:latest") is None


def held(lock: Path) -> bool:
    """Whether another process holds ``lock`` (flock), as deps.sh's compile does."""
    if not lock.exists():
        return False
    with lock.open() as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_a_compiled_tools_image_waits_for_the_background_compile(tmp_path, monkeypatch, capsys):
    """scripts/deps.sh (RUNTIME=docker) compiles the Go tools, oha and drill in the background holding COMPILE_LOCK;
    the image build of such a tool waits until it is released, then copies the binary (tools/_lib/go.sh, cargo.sh)."""
    from harness.runtimes import docker
    monkeypatch.setattr(docker, "COMPILE_LOCK", tmp_path / "compile.lock")
    holder = subprocess.Popen(["flock", str(tmp_path / "compile.lock"), "sh", "-c", "read line"],
                              stdin=subprocess.PIPE, text=True)
    try:
        while not held(tmp_path / "compile.lock"):
            time.sleep(0.05)
        threading.Timer(0.5, holder.stdin.close).start()   # the compile ends
        docker.wait_for_compiles(TOOLS_DIR / "oha")
        assert not held(tmp_path / "compile.lock")
    finally:
        holder.kill()
    assert "the image of oha waits for the compile" in capsys.readouterr().out
    docker.wait_for_compiles(TOOLS_DIR / "oha")      # no compile running: at once, silently
    assert capsys.readouterr().out == ""
    # the compiled tools are the go and cargo kinds of their manifests (no list kept by hand: a new Go or Rust tool
    # needs no edit here)
    compiled = [f.name for f in FOLDERS
                if re.search(r'^kind = "(go|cargo)"$', (f / "tool.toml").read_text(), re.M)]
    assert compiled and [f.name for f in FOLDERS if docker.compiled_on_this_machine(f)] == compiled
