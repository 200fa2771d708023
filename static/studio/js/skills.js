// Skills page: a folder upload sends each file with its path inside the folder. The
// browser's form would send base names only, so the path of each chosen file (in the
// order the files are sent) rides along as a hidden "paths" field.

const form = document.getElementById("skill-folder-form");
const input = document.getElementById("skill-folder");

input.addEventListener("change", () => {
  for (const old of form.querySelectorAll("input[name=paths]")) old.remove();
  for (const file of input.files) {
    const path = document.createElement("input");
    path.type = "hidden";
    path.name = "paths";
    path.value = file.webkitRelativePath || file.name;
    form.append(path);
  }
});
document.body.dataset.ready = "skills";
