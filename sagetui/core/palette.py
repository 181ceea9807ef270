"""Series colours shared by the console's plots and the exported SVG charts."""

# Okabe & Ito (2008): told apart with every common colour-vision deficiency.
OKABE_ITO = ("#56B4E9", "#E69F00", "#009E73", "#CC79A7", "#F0E442", "#D55E00", "#0072B2",
             "#BBBBBB")
